"""The multi-turn refinement environment of Progress-SQL (paper, Algorithm 1).

The package imports none of its modules up front: the environment (``core``) brings the parser
(sqlglot), and a process that only reads the feedback kinds or the turn protocols (the CLI's option
help, eval's parent process) must not load it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from progress_sql.env.core import EnvConfig, SQLRefineEnv, StepResult, prepare_golds, step_many
    from progress_sql.env.records import TurnRecord

#: The module of each name this package exports.
_HOMES = {
    "EnvConfig": "core",
    "SQLRefineEnv": "core",
    "StepResult": "core",
    "TurnRecord": "records",
    "step_many": "core",
    "prepare_golds": "core",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # found once
    return value


__all__ = ["EnvConfig", "SQLRefineEnv", "StepResult", "TurnRecord", "prepare_golds", "step_many"]
