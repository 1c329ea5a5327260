"""Backends by name, built from command-line style options."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from progress_sql.backends.base import Backend
from progress_sql.errors import ConfigError
from progress_sql.registry import lookup


def _openai(options: Mapping[str, Any]) -> Backend:
    from progress_sql.backends.openai_compat import OpenAICompatibleBackend

    if not options.get("base_url") or not options.get("model"):
        raise ConfigError("the openai backend needs --base-url (e.g. http://localhost:8000/v1) and --model")
    return OpenAICompatibleBackend(
        options["base_url"],
        options["model"],
        api_key=options.get("api_key"),
        concurrency=options.get("concurrency", 8),
        sampling=options.get("sampling") or "n",
    )


def _replay(options: Mapping[str, Any]) -> Backend:
    from progress_sql.backends.replay import ReplayBackend

    if not options.get("replay"):
        raise ConfigError("the replay backend needs --replay FILE (JSONL of {key, responses})")
    return ReplayBackend.from_file(options["replay"])


def _transformers(options: Mapping[str, Any]) -> Backend:
    try:
        from progress_sql.backends.hf import TransformersBackend
    except ImportError as error:  # pragma: no cover - depends on the installed extras
        raise ConfigError("the transformers backend needs the [trl] extra (torch and transformers)") from error
    if not options.get("model"):
        raise ConfigError("the transformers backend needs --model (a local model folder)")
    return TransformersBackend.from_pretrained(options["model"], device=options.get("device", "cpu"))


BACKENDS: Mapping[str, Callable[[Mapping[str, Any]], Backend]] = {
    "openai": _openai,
    "replay": _replay,
    "transformers": _transformers,
}


#: Backends whose answers do not depend on the sampling settings (``replay`` plays scripted responses):
#: temperature 0 makes no vote over them degenerate.
SCRIPTED_BACKENDS = frozenset({"replay"})


def make_backend(name: str, **options: Any) -> Backend:
    """Build the backend called ``name``; unknown names and missing options are ConfigErrors."""
    return lookup(BACKENDS, name, "backend")(options)
