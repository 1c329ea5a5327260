"""Safe SQL execution, named comparison presets and the gold-result cache."""

from __future__ import annotations

from progress_sql.execution.executor import DEFAULT_LIMITS, ExecLimits, Executor, execute
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool

__all__ = ["DEFAULT_LIMITS", "ExecJob", "ExecLimits", "ExecutionPool", "Executor", "execute"]
