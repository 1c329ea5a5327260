"""The OpenEnv server: OpenEnv's own FastAPI app (``create_app``, openenv-core 0.3.0
openenv/core/env_server/http_server.py:1515) over :class:`ProgressSQLEnvironment`, so the routes, the
WebSocket session protocol and the error shapes are OpenEnv's. Settings: the episodes' (the profile,
any :class:`~progress_sql.env.core.EnvConfig` field, ``step_rewards``, ``execution_workers``; see
:func:`~progress_sql.integrations.hosted.host_settings`) plus the server's :data:`SERVER_KEYS`."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig

from progress_sql.errors import ConfigError
from progress_sql.integrations.hosted import host_settings, read_export, read_settings
from progress_sql.integrations.openenv.environment import ProgressSQLEnvironment, ServedRows
from progress_sql.integrations.openenv.models import SQLAction, SQLObservation

__all__ = ["build_app", "concurrency", "read_settings", "serve", "served_rows", "split_settings"]
from progress_sql.integrations.openenv.rows import DEFAULT_ROW_FORMAT

#: Concurrent sessions when the settings say nothing: TRL opens one WebSocket per generation, and its
#: OpenEnv guide asks for at least ``generation_batch_size`` (its section "Server concurrency").
DEFAULT_MAX_SESSIONS = 64
#: Settings of the server itself, not of the episodes: the exported rows' shape (``trl``, ``skyrl``,
#: ``verl``), how many sessions may be open at once, and after how many idle seconds one is closed.
SERVER_KEYS = ("row_format", "max_sessions", "session_timeout_s")


def split_settings(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``settings`` as (the server's :data:`SERVER_KEYS`, the episodes' settings)."""
    server = {key: value for key, value in settings.items() if key in SERVER_KEYS}
    episodes = {key: value for key, value in settings.items() if key not in SERVER_KEYS}
    return server, episodes


def served_rows(rows: Path, settings: Mapping[str, Any]) -> ServedRows:
    """The rows of ``rows`` read in the settings' ``row_format`` with the episodes' settings; unknown
    keys, bad values and malformed rows raise here, before the server listens."""
    server, episodes = split_settings(settings)
    row_format = str(server.get("row_format") or DEFAULT_ROW_FORMAT)
    return ServedRows(read_export(rows, row_format), host_settings(episodes))


def concurrency(settings: Mapping[str, Any]) -> ConcurrencyConfig:
    server, _ = split_settings(settings)
    given = server.get("max_sessions")
    sessions = DEFAULT_MAX_SESSIONS if given is None else int(given)
    if sessions < 1:
        raise ConfigError(f"max_sessions must be >= 1, got {sessions}")
    timeout = server.get("session_timeout_s")
    if timeout is not None and float(timeout) <= 0:
        raise ConfigError(f"session_timeout_s must be > 0, got {timeout}")
    return ConcurrencyConfig(max_concurrent_envs=sessions, session_timeout=None if timeout is None else float(timeout))


def build_app(rows: Path, settings: Mapping[str, Any]) -> Any:
    """OpenEnv's FastAPI app serving ``rows`` (one episode per WebSocket session; ``POST /reset`` and
    ``/step`` are OpenEnv's stateless one-call routes)."""
    served = served_rows(rows, settings)
    # a partial of the class: OpenEnv checks SUPPORTS_CONCURRENT_SESSIONS on the class it wraps
    factory = functools.partial(ProgressSQLEnvironment, served)
    return create_app(
        factory, SQLAction, SQLObservation, env_name="progress_sql", concurrency_config=concurrency(settings)
    )


def serve(rows: Path, *, host: str, port: int, settings: Mapping[str, Any]) -> None:
    """Serve ``rows`` on ``host:port`` until stopped (uvicorn, as OpenEnv's own servers run)."""
    import uvicorn

    uvicorn.run(build_app(rows, settings), host=host, port=port)
