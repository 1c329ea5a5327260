"""``progress-sql serve-env``: serve the refinement environment to a framework that drives episodes over
HTTP, in the protocol of an environment standard (docs/openenv.md, docs/nemo-gym.md).

``progress-sql serve-env openenv --rows train.jsonl --port 8000`` serves the rows of a ``progress-sql
export`` file until stopped. The standard's package comes with its extra (or its side environment);
without it the command names the extra and exits 2 before anything starts.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path

import typer

from progress_sql.cli import _common as common
from progress_sql.errors import ConfigError


@dataclass(frozen=True, slots=True)
class StandardServer:
    """A standard whose adapter serves episodes: the module with its ``serve(rows, *, host, port,
    settings)``, the upstream package it needs, the extra that installs it and its docs page."""

    module: str
    package: str
    extra: str
    docs: str


SERVERS: dict[str, StandardServer] = {
    "openenv": StandardServer("progress_sql.integrations.openenv.server", "openenv", "openenv", "docs/openenv.md"),
    "nemo-gym": StandardServer("progress_sql.integrations.nemo_gym.server", "nemo_gym", "nemo-gym", "docs/nemo-gym.md"),
}


SETTINGS_HELP = (
    "Environment settings: a .json/.yaml file or a JSON object (EnvConfig fields, step_rewards, "
    "execution_workers and the adapter's own keys; docs/<standard>.md)."
)


def serve_env_command(
    standard: str = typer.Argument(..., help=f"The standard's protocol: {', '.join(SERVERS)}."),
    rows: Path = typer.Option(..., "--rows", help="A progress-sql export file (jsonl or parquet) of the episodes."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    profile: str = common.profile_option(),
    settings: str | None = typer.Option(None, "--settings", help=SETTINGS_HELP),
    as_json: bool = common.json_option(),
) -> None:
    """Serve the refinement environment over HTTP in an environment standard's protocol.

    OpenEnv (docs/openenv.md) and NeMo Gym (docs/nemo-gym.md) serve here; verifiers and Atropos load the
    environment in their own processes (docs/verifiers.md, docs/atropos.md)."""
    server = SERVERS.get(standard)
    if server is None:
        common.fail(f"unknown standard {standard!r}; served: {', '.join(SERVERS)}")
    if not rows.is_file():
        common.fail(f"--rows: no file {rows} (write one with progress-sql export)")
    from progress_sql.integrations.hosted import read_settings

    try:
        given = read_settings(settings, what="--settings")
    except ConfigError as error:
        common.fail(str(error))
    given.setdefault("profile", profile)
    if importlib.util.find_spec(server.package) is None:
        common.fail(
            f"serve-env {standard} needs the {server.package} package: pip install -e '.[{server.extra}]' "
            f"(or its side environment, {server.docs})"
        )
    module = importlib.import_module(server.module)
    started = {"standard": standard, "rows": str(rows), "url": f"http://{host}:{port}", "profile": given["profile"]}
    if as_json:  # one line a launcher can read before the server's own log
        typer.echo(json.dumps(started), nl=True)
    else:
        common.stderr.print(f"serving {rows} in {standard}'s protocol at {started['url']} (profile {given['profile']})")
    try:
        module.serve(rows, host=host, port=port, settings=given)
    except ConfigError as error:
        common.fail(str(error))


def register(app: typer.Typer) -> None:
    common.add_command(app, "serve-env", serve_env_command)
