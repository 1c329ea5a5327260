"""verifiers 0.4.0 integration (Prime Intellect's ``verifiers``, ``vf-eval``, prime-rl; extra
``[verifiers]``, in its own environment: constraints-verifiers.txt): the exported rows as a
``vf.Taskset`` (:mod:`.taskset`), a multi-turn ``vf.Env`` that hosts each episode and answers with the
ODT feedback (:mod:`.env`), and the rubric as the task's ``@vf.reward`` / ``@vf.metric`` methods over
the episode's summary (:mod:`.summary`). verifiers finds a taskset by the name of an importable module
whose ``__all__`` exports one ``Taskset`` (and here one ``Env``) subclass: this one; docs/verifiers.md."""

from __future__ import annotations

from progress_sql.integrations.verifiers.env import VerifiersEnvConfig, VerifiersRefinementEnv
from progress_sql.integrations.verifiers.taskset import (
    VerifiersTask,
    VerifiersTaskData,
    VerifiersTaskset,
    VerifiersTasksetConfig,
)

__all__ = [
    "VerifiersEnvConfig",
    "VerifiersRefinementEnv",
    "VerifiersTask",
    "VerifiersTaskData",
    "VerifiersTaskset",
    "VerifiersTasksetConfig",
]
