"""The ``progress-sql`` command: one subcommand per job, each a module of :data:`COMMAND_MODULES` with a
``*_command`` function and a ``register(app)`` through ``_common.add_command``; adding a subcommand
means adding a module and one name here (docs/cli.md)."""

from __future__ import annotations

import importlib

import typer

from progress_sql import __version__

COMMAND_MODULES: tuple[str, ...] = (
    "ablate",
    "audit",
    "build-suite",
    "compare-runs",
    "demo",
    "diagnose",
    "eval",
    "export",
    "reward-bound",
    "rollout",
    "train",
)

app = typer.Typer(
    name="progress-sql",
    help="Multi-turn RL for Text-to-SQL: ODT diagnosis, progressive rewards, safe execution, evaluation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"progress-sql {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """progress-sql: the open reference implementation of Progress-SQL."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"progress_sql.cli.{_name.replace('-', '_')}").register(app)


def main() -> None:
    """Console entry point."""
    app()
