"""The multi-turn refinement environment of Progress-SQL (paper, Algorithm 1)."""

from __future__ import annotations

from progress_sql.env.core import EnvConfig, SQLRefineEnv, StepResult
from progress_sql.env.records import TurnRecord

__all__ = ["EnvConfig", "SQLRefineEnv", "StepResult", "TurnRecord"]
