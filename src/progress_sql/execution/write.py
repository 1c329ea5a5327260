"""Write tasks: run an untrusted DML script on a disposable copy of the database, then the task's
check queries on the state it left (docs/tasks.md#write-tasks, docs/semantics.md for the read path this
extends); the outcome is judged against the reference script's in :mod:`progress_sql.judge.write`.

The original file is only ever opened read-only (:func:`~progress_sql.execution.executor.open_readonly`);
SQLite's backup API copies it into memory (or, for a large file, into a temporary file that is
deleted afterwards). On the copy a per-task gate and authorizer allow only the declared statement
kinds on the declared tables (no DDL, ATTACH, PRAGMA, transactions or other tables); one deadline
covers the copy, the script and the checks; a script that changes more rows than the row cap is
stopped. The job runs in the pool's isolated workers like a read (:class:`WriteJob` is an
:class:`~progress_sql.execution.jobs.ExecJob`), so the memory cap and the hard kill apply too.

>>> split_statements("INSERT INTO t VALUES ('a;b'); DELETE FROM t WHERE x = 1")
["INSERT INTO t VALUES ('a;b');", 'DELETE FROM t WHERE x = 1']
>>> write_gate("DROP TABLE singer", WriteSpec(("singer",), ()))
'this task allows only INSERT, UPDATE, DELETE statements (on singer), found DROP'
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from progress_sql.execution.executor import (
    _LEADING_NOISE,  # the read gate's own scanner: one definition of "leading noise"
    DEFAULT_LIMITS,
    ExecLimits,
    _run_on,  # the read path's capped fetch, reused for the check queries
    open_readonly,
    statement_gate,
)
from progress_sql.execution.jobs import WriteJob
from progress_sql.execution.printf_guard import (
    PAST_DEADLINE,
    GuardedConnection,
    guard_printf,
    guard_stopped,
    start_statement,
)
from progress_sql.types import ExecResult, WriteSpec, WriteStatement

#: Files larger than this are copied into a temporary file instead of memory (the worker's memory cap).
MEMORY_COPY_MAX_BYTES = 64 * 2**20
#: Pages copied per backup step (the deadline is checked between steps).
_BACKUP_PAGES = 256
_FIRST_WORD = re.compile(r"[A-Za-z_]+")
_WRITE_ACTIONS: dict[int, WriteStatement] = {
    sqlite3.SQLITE_INSERT: "insert",
    sqlite3.SQLITE_UPDATE: "update",
    sqlite3.SQLITE_DELETE: "delete",
}
_READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
# sqlite3.SQLITE_LIMIT_* (Python >= 3.11); the numbers are SQLite's.
_LIMITS = ((0, "max_value_bytes"), (1, "max_sql_chars"), (8, "max_like_pattern"))
_LIMIT_ATTACHED = 7


@dataclass(frozen=True, slots=True)
class WriteResult(ExecResult):
    """What a write job produced: the script's status (``ok``, ``error`` for a refused or failing
    statement, ``timeout``), the rows it changed, and one result per probe (empty unless the script
    ran to its end)."""

    changes: int = 0
    probes: tuple[ExecResult, ...] = ()


def split_statements(script: str) -> list[str]:
    """The statements of ``script`` in order (a ``;`` inside a string or comment does not split)."""
    statements: list[str] = []
    start = 0
    for position, char in enumerate(script):
        if char == ";" and sqlite3.complete_statement(script[start : position + 1]):
            statement = script[start : position + 1].strip()
            if statement.strip("; \t\r\n"):
                statements.append(statement)
            start = position + 1
    rest = script[start:].strip()
    if rest and _LEADING_NOISE.match(rest).end() < len(rest):  # type: ignore[union-attr]  # matches ""
        statements.append(rest)
    return statements


def _first_word(statement: str) -> str:
    rest = statement[_LEADING_NOISE.match(statement).end() :]  # type: ignore[union-attr]  # matches ""
    word = _FIRST_WORD.match(rest)
    return word.group().lower() if word else rest[:10]


def _allowance(spec_tables: Sequence[str], statements: Sequence[str]) -> str:
    kinds = ", ".join(kind.upper() for kind in statements)
    return f"{kinds} statements (on {', '.join(spec_tables) or 'no table'})"


def write_gate(script: str, spec: WriteSpec) -> str | None:
    """Why ``script`` may not run under ``spec`` (None when every statement is an allowed kind; the
    authorizer then checks the tables). ``WITH`` may open an allowed statement."""
    statements = split_statements(script)
    if not statements:
        return "empty SQL"
    allowed = {*spec.statements, "with"}
    if "replace" in spec.statements:
        allowed.add("insert")  # INSERT OR REPLACE
    for statement in statements:
        word = _first_word(statement)
        if word not in allowed:
            return f"this task allows only {_allowance(spec.tables, spec.statements)}, found {word.upper()}"
    return None


def _write_authorizer(tables: Sequence[str], statements: Sequence[str]):  # type: ignore[no-untyped-def]
    allowed_tables = {table.lower() for table in tables}
    kinds = set(statements)
    if "replace" in kinds:
        kinds |= {"insert", "delete"}

    def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        kind = _WRITE_ACTIONS.get(action)
        if kind is not None and kind in kinds and (arg1 or "").lower() in allowed_tables:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    return authorize


def _read_authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    return sqlite3.SQLITE_OK if action in _READ_ACTIONS else sqlite3.SQLITE_DENY


class _DeadlinePassedError(Exception):
    """The copy took the whole budget."""


def _copy(db_path: str, limits: ExecLimits, deadline: float, target: str) -> sqlite3.Connection:
    """A writable copy of ``db_path`` (opened read-only) at ``target`` (``:memory:`` or a file path)."""
    source = open_readonly(db_path, limits)
    copy = sqlite3.connect(target, isolation_level=None, check_same_thread=False, factory=GuardedConnection)
    try:
        guard_printf(copy, limits.max_value_bytes)

        def check(_status: int, _remaining: int, _total: int) -> None:
            if time.monotonic() > deadline:
                raise _DeadlinePassedError

        source.backup(copy, pages=_BACKUP_PAGES, progress=check)
        setlimit: Callable[[int, int], int] | None = getattr(copy, "setlimit", None)  # Python >= 3.11
        if setlimit is not None:
            for number, name in _LIMITS:
                setlimit(number, getattr(limits, name))
            setlimit(_LIMIT_ATTACHED, 0)
    except BaseException:
        copy.close()
        raise
    finally:
        source.close()
    return copy


def run_write(job: WriteJob) -> WriteResult:
    """Run ``job`` (in a worker process: the pool's isolation applies); never raises on model SQL."""
    start = time.perf_counter()
    limits = job.limits
    deadline = time.monotonic() + limits.timeout_s
    spec = WriteSpec(job.tables, (), job.statements)
    refusal = write_gate(job.sql, spec)
    if refusal is not None:
        return WriteResult("error", error=refusal, elapsed_s=time.perf_counter() - start)
    temporary: str | None = None
    try:
        size = Path(job.db_path).stat().st_size
    except OSError as error:
        return WriteResult("error", error=f"cannot open database: {error}")
    if size > MEMORY_COPY_MAX_BYTES:
        handle, temporary = tempfile.mkstemp(prefix="progress-sql-write-", suffix=".sqlite")
        os.close(handle)
    try:
        try:
            conn = _copy(job.db_path, limits, deadline, temporary or ":memory:")
        except _DeadlinePassedError:
            return WriteResult("timeout", error=f"exceeded {limits.timeout_s:g} s copying the database")
        except sqlite3.Error as error:
            return WriteResult("error", error=f"cannot open database: {error}")
        try:
            return _run_script(conn, job, deadline, start)
        finally:
            conn.close()
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _run_script(conn: sqlite3.Connection, job: WriteJob, deadline: float, start: float) -> WriteResult:
    limits = job.limits
    stopped: list[str] = []

    def watchdog() -> int:
        if time.monotonic() > deadline:
            stopped.append("timeout")
            return 1
        if conn.total_changes > limits.max_rows:
            stopped.append("rows")
            return 1
        return 0

    conn.set_authorizer(_write_authorizer(job.tables, job.statements))
    start_statement(conn, deadline)
    conn.set_progress_handler(watchdog, limits.progress_steps)
    try:
        for statement in split_statements(job.sql):
            cursor = conn.execute(statement)
            try:
                for _ in cursor:  # RETURNING rows are read and dropped
                    pass
            finally:
                cursor.close()
            if conn.total_changes > limits.max_rows:  # SQLite counts a statement's changes once it ends
                stopped.append("rows")
                raise sqlite3.OperationalError("row cap")
    except (sqlite3.Error, ValueError, OverflowError, MemoryError, RecursionError) as error:
        elapsed = time.perf_counter() - start
        guarded = guard_stopped(conn, str(error))
        if (stopped and stopped[0] == "timeout") or guarded == PAST_DEADLINE:
            return WriteResult("timeout", error=f"exceeded {limits.timeout_s:g} s", elapsed_s=elapsed)
        if stopped:
            return WriteResult("error", error=f"the script changed more than {limits.max_rows} rows", elapsed_s=elapsed)
        if guarded is not None:
            return WriteResult("error", error=guarded[:500], elapsed_s=elapsed)
        if isinstance(error, MemoryError):
            return WriteResult("error", error="out of memory", elapsed_s=elapsed)
        message = str(error).strip() or type(error).__name__
        if "not authorized" in message:
            message = f"{message}: this task allows only {_allowance(job.tables, job.statements)}"
        return WriteResult("error", error=message[:500], elapsed_s=elapsed)
    finally:
        conn.set_progress_handler(None, 0)
    changes = conn.total_changes
    conn.set_authorizer(_read_authorizer)
    probes = []
    for probe in job.probes:
        refusal = statement_gate(probe)
        if refusal is not None:
            probes.append(ExecResult("error", error=refusal))
            continue
        probes.append(_run_on(conn, probe, limits, time.perf_counter(), deadline, str))
    return WriteResult("ok", elapsed_s=time.perf_counter() - start, changes=changes, probes=tuple(probes))


# -- the parent's side: jobs and judging -------------------------------------------------------------
def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def probes_of(spec: WriteSpec) -> tuple[str, ...]:
    """The probe queries of a task: its checks, then ``SELECT *`` of each compared table."""
    return (
        *(check.sql for check in spec.checks),
        *(f"SELECT * FROM {quote_identifier(t)}" for t in spec.compare_tables),
    )


def write_job(db_path: str, script: str, spec: WriteSpec, limits: ExecLimits = DEFAULT_LIMITS) -> WriteJob:
    """The job that runs ``script`` on a copy of ``db_path`` and probes the state it leaves."""
    return WriteJob(db_path, script, limits, spec.tables, spec.statements, probes_of(spec))


__all__ = [
    "MEMORY_COPY_MAX_BYTES",
    "WriteJob",
    "WriteResult",
    "probes_of",
    "run_write",
    "split_statements",
    "write_gate",
    "write_job",
]
