"""What every subcommand shares: option definitions (``*_option`` factories: one meaning, one default),
registration (:func:`add_command`: ``error: ...`` and exit code 2; SIGINT, SIGTERM and SIGHUP end a
command cleanly, its run folder marked interrupted), run folders and consoles; the convention: docs/cli.md."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from progress_sql.cluster.connect import shard_workers
from progress_sql.env.feedback import FEEDBACK_KINDS
from progress_sql.env.protocols import PROTOCOLS
from progress_sql.errors import ConfigError, ProgressSQLError
from progress_sql.execution.engines.base import Engine
from progress_sql.execution.executor import MAX_TIMEOUT_S
from progress_sql.execution.lifetime import Interrupted, interrupt
from progress_sql.judge.compare import PRESETS
from progress_sql.profiles import DEFAULT_PROFILE, PROFILES
from progress_sql.runfolder import RunFolder, prepared_folder

stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)

#: ``--workers`` everywhere: 0 means one worker process per core.
DEFAULT_WORKERS = 0
WORKERS_HELP = "Worker processes (0: one per core)."

#: ``--timeout`` everywhere: seconds one SQL query may run before it counts as timed out. 30 s is the
#: executor's own default (``ExecLimits``) and the official BIRD evaluator's per-query limit; no Spider
#: or BIRD dev gold comes near it, so a verdict does not depend on how busy the machine is.
DEFAULT_TIMEOUT_S = 30.0
#: The commands whose ``--timeout`` default differs from :data:`DEFAULT_TIMEOUT_S`, and why. This is
#: the one table of exceptions; docs/cli.md repeats it.
TIMEOUT_EXCEPTIONS: dict[str, tuple[float, str]] = {
    "build-suite": (
        2.0,
        "it runs every gold and its neighbour queries on each small fuzzed database (thousands of "
        "queries per schema); a runaway neighbour costs build time, not a verdict",
    ),
    "audit": (
        5.0,
        "it is check G02's threshold: a gold slower than 5 s is flagged (Arctic-Text2SQL-R1's cut-off)",
    ),
    "export": (
        5.0,
        "it is the data filter's G02 threshold, the same as the audit's and train --filter's",
    ),
}
TIMEOUT_HELP = "Seconds one SQL query may run before it counts as timed out"

ALGORITHMS = ("grpo", "gspo")


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error that says what to fix on stderr and exit non-zero (``message`` is plain text:
    brackets such as ``'.[trl]'`` are printed, not read as markup)."""
    stderr.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code)


def warn(message: str) -> None:
    """Print a warning on stderr (the command goes on; ``message`` is plain text)."""
    stderr.print(f"[yellow]warning:[/] {escape(message)}")


#: The signals a command ends cleanly on; its exit code is 128 + the signal's number (130, 143, 129).
#: (SIGHUP: where the platform has it.)
INTERRUPT_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
#: The parameters that name a command's run folder (export's is ``--report-dir``; a file is no folder).
RUN_FOLDER_PARAMETERS = ("out", "report_dir")


@contextlib.contextmanager
def interrupts_raised() -> Iterator[None]:
    """While the block runs (in the main thread), each of :data:`INTERRUPT_SIGNALS` ends the child
    processes and raises :class:`~progress_sql.execution.lifetime.Interrupted` where the main thread is
    (:func:`~progress_sql.execution.lifetime.interrupt`), so every ``with`` block on the way out closes
    what it opened; a second signal ends the process at once. The handlers before are put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: object) -> None:
        for each in INTERRUPT_SIGNALS:  # the clean stop is under way: another signal means now
            signal.signal(each, _end_now)
        interrupt(signum)

    previous = {each: signal.signal(each, stop) for each in INTERRUPT_SIGNALS}
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


def _end_now(signum: int, _frame: object) -> None:
    os._exit(128 + signum)


def _mark_interrupted(command: str, kwargs: dict[str, Any], started: float, signum: int) -> str:
    """Mark the command's run folder interrupted, unless this run completed it (its summary was
    written after ``started``); returns what to tell the user about it."""
    for name in RUN_FOLDER_PARAMETERS:
        path = kwargs.get(name)
        if not isinstance(path, Path) or not path.is_dir():
            continue
        folder = RunFolder(path)
        with contextlib.suppress(OSError):
            if folder.summary_path.stat().st_mtime >= started:
                return f"; the run in {path} had completed"
        try:
            folder.mark_interrupted(command, signal.Signals(signum).name)
        except OSError as error:
            return f"; cannot mark {path} interrupted: {error}"
        told = f"; {path} is marked interrupted ({folder.interrupted_path.name}): run the command again to finish"
        return told + _resumable(path)
    return ""


def _resumable(path: Path) -> str:
    """What the user can keep of an interrupted run into ``path`` (eval's journaled answers)."""
    from progress_sql.evaluation.journal import JOURNAL_FILE, journaled

    kept = journaled(path)
    return f" (add --resume to keep the {kept} answers in {JOURNAL_FILE})" if kept else ""


def add_command(app: typer.Typer, name: str, command: Callable[..., Any]) -> None:
    """Register ``command`` as subcommand ``name``: a ProgressSQLError it raises becomes ``error: ...``
    on stderr and exit code 2 (a library entry point that cannot write its run folder raises ConfigError);
    SIGINT, SIGTERM or SIGHUP stop it cleanly (:func:`interrupts_raised`), mark its run folder interrupted
    and exit with 128 + the signal's number."""

    @functools.wraps(command)
    def reporting_errors(*args: Any, **kwargs: Any) -> Any:
        started = time.time()
        with interrupts_raised():  # still set while the folder is marked: a second signal ends it at once
            try:
                return command(*args, **kwargs)
            except ProgressSQLError as error:  # its text is not markup (a message may name the [ray] extra)
                fail(str(error))
            except KeyboardInterrupt as stopped:
                signum = stopped.signum if isinstance(stopped, Interrupted) else int(signal.SIGINT)
                told = _mark_interrupted(name, kwargs, started, signum)
                stderr.print(f"interrupted by {signal.Signals(signum).name}{escape(told)}")
                raise typer.Exit(128 + signum) from None

    app.command(name)(reporting_errors)


def table(title: str, left: Sequence[str], right: Sequence[str] = ()) -> Table:
    """A rich table with a bold header: the ``left`` columns left-aligned, then the ``right`` ones."""
    result = Table(title=title, header_style="bold")
    for column in left:
        result.add_column(column)
    for column in right:
        result.add_column(column, justify="right")
    return result


def resolve_workers(workers: int) -> int:
    """``--workers`` as a process count: 0 is one per core; negative values are an error."""
    if workers < 0:
        fail(f"--workers must be >= 0 (0: one per core), got {workers}")
    return workers or os.cpu_count() or 1


def timeout_default(command: str) -> float:
    """The ``--timeout`` default of ``command`` (:data:`TIMEOUT_EXCEPTIONS`, else the common one)."""
    return TIMEOUT_EXCEPTIONS.get(command, (DEFAULT_TIMEOUT_S, ""))[0]


def check_timeout(timeout: float) -> None:
    if not 0 < timeout <= MAX_TIMEOUT_S:  # nan and inf (typer reads them as floats) fail here too
        fail(f"--timeout must be > 0 and at most {MAX_TIMEOUT_S:,.0f} seconds, got {timeout}")


def prepare_out(out: Path) -> Path:
    """Create the output folder before the work starts, so that a bad path fails at once."""
    return prepared_folder(out).path


# ---- option definitions (each call makes a fresh typer option) -------------------------------


TASK_HELP = "A registered task (spider-dev, bird-dev, spider-dk, ...) or a Spider-format questions file."


def task_option(*, required: bool = True) -> Any:
    return typer.Option(... if required else None, "--task", help=TASK_HELP)


def data_dir_option() -> Any:
    return typer.Option(None, "--data-dir", help="Folder in the benchmark's release layout.")


def workers_option() -> Any:
    return typer.Option(DEFAULT_WORKERS, "--workers", help=WORKERS_HELP)


def timeout_option(command: str) -> Any:
    """``--timeout`` with the common help; ``command`` picks its default from the one table."""
    seconds, reason = TIMEOUT_EXCEPTIONS.get(command, (DEFAULT_TIMEOUT_S, ""))
    if reason:
        text = f"{TIMEOUT_HELP}; {seconds:g} here, not {DEFAULT_TIMEOUT_S:g}: {reason}."
    else:
        text = f"{TIMEOUT_HELP} (gold and model SQL alike)."
    return typer.Option(seconds, "--timeout", help=text)


def preset_option(default: str | None = None) -> Any:
    """``--preset``: always the comparison semantics; ``None`` as default means the task's."""
    shown = "the task's" if default is None else default
    return typer.Option(default, "--preset", help=f"Comparison semantics: {', '.join(PRESETS)} (default: {shown}).")


def feedback_option() -> Any:
    """``--feedback KIND``: the feedback after a wrong answer (``env/feedback.py``); None: the profile's."""
    return typer.Option(
        None, "--feedback", help=f"Feedback after a wrong answer: {', '.join(FEEDBACK_KINDS)} (execution: the "
        "database's observation only, no gold) (default: the profile's).",
    )  # fmt: skip


def protocol_option() -> Any:
    """``--protocol NAME``: what a turn may be (``env/protocols.py``); None: ``answer``."""
    return typer.Option(
        None, "--protocol", help=f"Turn protocol: {', '.join(PROTOCOLS)}; probe and skyrl take <sql> probes and a "
        "<solution> answer (skyrl: SkyRL-SQL's, with T = 5, reward skyrl-sql and preset bird unless given) "
        "(default: answer).",
    )  # fmt: skip


def algorithm_option() -> Any:
    return typer.Option("grpo", "--algorithm", help=f"RL algorithm: {' or '.join(ALGORITHMS)}.")


def profile_option() -> Any:
    """``--profile NAME``: the profile (``progress_sql.profiles``) every setting the command's options
    leave unset comes from; an unknown name fails with the known ones (exit 2)."""
    return typer.Option(
        DEFAULT_PROFILE,
        "--profile",
        help=f"Profile: {', '.join(PROFILES)}: the environment, ODT and reward settings no option here "
        "gives (docs/profiles.md); an option given here wins over the profile.",
    )


def json_option() -> Any:
    return typer.Option(False, "--json", help="Print the result as JSON on stdout instead of tables.")


def out_dir_option(default: Path | None = None, *, also: str = "") -> Any:
    """``--out DIR``: the run folder; ``also`` names the files the command writes besides the three."""
    extra = f" ({also})" if also else ""
    return typer.Option(
        ... if default is None else default,
        "--out",
        help=f"Run folder: summary.json, samples.jsonl, report.md{extra}.",
    )


# ---- data hygiene (docs/export.md#the-leakage-guard, docs/training.md#a-clean-rl-set) ------------


def suite_option() -> Any:
    """``--suite DIR``: judge with a test suite (``progress-sql build-suite``)."""
    return typer.Option(
        None,
        "--suite",
        help="Test-suite folder (progress-sql build-suite): a match must also match on every suite database.",
    )


def allow_eval_overlap_option() -> Any:
    return typer.Option(
        False,
        "--allow-eval-overlap",
        help="Train on databases or schemas of registered evaluation tasks anyway (the manifest records it).",
    )


def eval_data_dir_option() -> Any:
    return typer.Option(
        [],
        "--eval-data-dir",
        help="Another folder holding evaluation tasks' files for the leakage guard (repeatable; the "
        "training data's own folders are always read).",
    )


# ---- the run explorer page (progress-sql view; docs/view.md) ----------------------------------


def write_view(out: Path, enabled: bool, *, quiet: bool = False) -> None:
    """What ``eval``, ``rollout``, ``train`` and ``ablate`` call after writing their run folder: the page
    into it (unless ``--no-view``) and its path printed (not when ``quiet``: stdout carries ``--json``)."""
    if not enabled:
        return
    from progress_sql.view import write_run_page  # only when a page is written

    try:
        path = write_run_page(out)
    except OSError as error:
        fail(f"cannot write the page into {out}: {error}")
    if not quiet:
        stdout.print(f"page: {path}")


def view_option() -> bool:
    """``--view/--no-view`` of the commands that write the page into their run folder."""
    return typer.Option(  # type: ignore[no-any-return]
        True, "--view/--no-view", help="Write the run explorer page (view.html, docs/view.md) into the run folder."
    )


BACKEND_DB_HELP = (
    "Run every query on the task's databases ported by `progress-sql port-db` to this PostgreSQL database "
    "(postgresql://...#, the reader role) or DuckDB folder (duckdb:DIR) instead of the SQLite files: golds are "
    "transpiled, prompts and the ODT use that dialect; records keep the location without a password."
)


def backend_db_option() -> Any:
    """``--backend-db``: one meaning, default (None: the SQLite files) and help for eval, rollout,
    train and export."""
    return typer.Option(None, "--backend-db", help=BACKEND_DB_HELP)


def backend_engine(backend_db: str | None) -> Engine:
    """The engine of ``--backend-db`` (SQLite without one), its driver checked before anything runs."""
    from progress_sql.execution.engines import ENGINES, engine_of

    if backend_db is None:
        return ENGINES["sqlite"]
    engine = engine_of(backend_db)
    if engine.name == "sqlite":
        fail(f"--backend-db must be a postgresql:// connection string or a duckdb:DIR folder, got {backend_db!r}")
    try:
        engine.runner().close()
    except ImportError as error:
        fail(f"--backend-db {engine.display_name} needs its driver (pip install 'progress-sql[engines]'): {error}")
    return engine


RAY_HELP = (
    "Run on a Ray cluster (needs the [ray] extra): auto joins the cluster this machine belongs to "
    "(ray start), local starts Ray here for the run, or a cluster address (host:6379, ray://host:10001). "
    "Work is sharded by database; --workers counts processes per shard (docs/scaling.md)."
)


def ray_option() -> Any:
    """``--ray ADDRESS``: the same meaning in every command that has it; absent, Ray is never imported."""
    return typer.Option(None, "--ray", metavar="auto|local|ADDRESS", help=RAY_HELP)


def ray_databases_option() -> Any:
    return typer.Option(
        "shared",
        "--ray-databases",
        help="With --ray, how database files reach the nodes: shared (the same path on every node: a network "
        "filesystem or bucket mount) or object-store (shipped through Ray's object store: small databases).",
    )


def resolve_shard_workers(workers: int, ray: str | None) -> int:
    """``--workers`` as a process count: per shard with ``--ray`` (0: one), else :func:`resolve_workers`."""
    try:
        return shard_workers(workers, ray, os.cpu_count() or 1)
    except ConfigError as error:
        fail(str(error))
