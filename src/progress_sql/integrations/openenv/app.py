"""The server as OpenEnv environments are run, with uvicorn and environment variables::

    PROGRESS_SQL_OPENENV_ROWS=data/trl/train.jsonl \\
    PROGRESS_SQL_OPENENV_SETTINGS='{"profile": "paper", "timeout_s": 2}' \\
    uvicorn progress_sql.integrations.openenv.app:app --host 0.0.0.0 --port 8001

``PROGRESS_SQL_OPENENV_SETTINGS`` is a JSON object or a .json/.yaml file of settings (server.py). The
app is built when uvicorn first asks for it, so importing this module needs no variables."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from progress_sql.errors import ConfigError
from progress_sql.integrations.openenv.server import build_app, read_settings

ROWS_VARIABLE = "PROGRESS_SQL_OPENENV_ROWS"
SETTINGS_VARIABLE = "PROGRESS_SQL_OPENENV_SETTINGS"


@functools.cache
def app_from_environment() -> Any:
    """The app for the rows and settings the environment variables name (built once per process)."""
    rows = os.environ.get(ROWS_VARIABLE, "")
    if not rows:
        raise ConfigError(f"set {ROWS_VARIABLE} to an exported rows file (progress-sql export --format trl ...)")
    return build_app(Path(rows), read_settings(os.environ.get(SETTINGS_VARIABLE, "")))


def __getattr__(name: str) -> Any:
    # uvicorn reads ``app`` with getattr (PEP 562), so the variables are read only when serving
    if name == "app":
        return app_from_environment()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
