"""Text generation for rollouts and evaluation behind one small interface (:class:`Backend`).

Backends by name: ``openai`` (any OpenAI-compatible chat-completions server: vLLM, SGLang, ...),
``replay`` (scripted responses from a file), ``transformers`` (a local model; needs the ``[trl]`` extra).
"""

from __future__ import annotations

from progress_sql.backends.base import Backend, GenerationConfig

__all__ = ["Backend", "GenerationConfig"]
