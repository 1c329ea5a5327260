"""The multi-turn refinement environment of Progress-SQL (paper, Algorithm 1)."""

from __future__ import annotations

from progress_sql.env.core import EnvConfig, SQLRefineEnv, StepResult, TurnInfo

__all__ = ["EnvConfig", "SQLRefineEnv", "StepResult", "TurnInfo"]
