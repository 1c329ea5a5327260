"""verl 0.9.1 integration ([verl] extra, in its own environment: it conflicts with [trl]; [verl-gpu] on
GPUs): the agent loop (:mod:`.agent_loop`, registered by ``agent_loops.yaml``, :data:`AGENT_LOOPS_YAML`)
and ``compute_score`` (:mod:`.reward`, no verl import) over ``export --format verl`` rows; the v1
trainer with the training-step metrics (:mod:`.trainer`, :mod:`.metrics`) and its entry point
(:mod:`.main`, what recipes/verl start); docs/training.md."""

from __future__ import annotations

from pathlib import Path

from progress_sql.export.formats import VERL_AGENT_NAME, verl_example, verl_row
from progress_sql.integrations.verl.reward import TURNS_KEY, compute_score

#: The ``agent_name`` of every row; ``agent_loops.yaml`` registers the loop under this name.
AGENT_NAME = VERL_AGENT_NAME
#: The agent-loop registry file for ``actor_rollout_ref.rollout.agent.agent_loop_config_path``.
AGENT_LOOPS_YAML = Path(__file__).with_name("agent_loops.yaml")

__all__ = ["AGENT_LOOPS_YAML", "AGENT_NAME", "TURNS_KEY", "compute_score", "verl_example", "verl_row"]
