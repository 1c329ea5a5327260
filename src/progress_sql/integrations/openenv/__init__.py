"""OpenEnv integration (extra ``[openenv]``, its own environment: docs/openenv.md): the refinement
environment as an OpenEnv environment server (openenv-core's ``Environment``, its FastAPI app and
WebSocket sessions) over the rows of ``progress-sql export``, and its client (an ``EnvClient``), for
TRL's OpenEnv integration or any other trainer. Serve with
``uvicorn progress_sql.integrations.openenv.app:app`` or :func:`~progress_sql.integrations.openenv.server.serve`."""

from progress_sql.integrations.openenv.client import ProgressSQLEnvClient
from progress_sql.integrations.openenv.environment import ProgressSQLEnvironment, ServedRows
from progress_sql.integrations.openenv.models import SQLAction, SQLObservation, SQLState
from progress_sql.integrations.openenv.server import build_app, serve

__all__ = [
    "ProgressSQLEnvClient",
    "ProgressSQLEnvironment",
    "SQLAction",
    "SQLObservation",
    "SQLState",
    "ServedRows",
    "build_app",
    "serve",
]
