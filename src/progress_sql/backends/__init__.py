"""Text generation for rollouts and evaluation behind one small interface (:class:`Backend`): ``openai``,
``replay``, ``transformers`` (docs/environment.md#generation-backends-and-progress-sql-rollout)."""

from __future__ import annotations

from progress_sql.backends.base import Backend, GenerationConfig

__all__ = ["Backend", "GenerationConfig"]
