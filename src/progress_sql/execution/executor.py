"""Run one untrusted SQL statement against a SQLite file, safely, and return an :class:`ExecResult`.

The layers of protection (statement gate, read-only URI, authorizer, progress-handler deadline, row
and byte caps, SQLite limits; memory limits and a hard kill in the pool's worker processes), each
catching what the one before cannot, and what each stops: docs/semantics.md. :func:`execute` never
raises on model SQL: errors and timeouts are statuses.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from progress_sql.data.introspect import readonly_uri
from progress_sql.execution.printf_guard import (
    PAST_DEADLINE,
    GuardedConnection,
    guard_printf,
    guard_stopped,
    start_statement,
)
from progress_sql.sql.parse import MAX_PAREN_DEPTH, parens_deeper_than
from progress_sql.types import ExecResult, Row

_MIB = 2**20
# sqlite3.SQLITE_LIMIT_* exist from Python 3.11 (with Connection.setlimit); the numbers are SQLite's.
_LIMIT_LENGTH = 0
_LIMIT_SQL_LENGTH = 1
_LIMIT_LIKE_PATTERN_LENGTH = 8
_LIMIT_ATTACHED = 7


#: The longest deadline a statement may have: 2**31 - 1 milliseconds (about 24.8 days), PostgreSQL's largest
#: ``statement_timeout``; a longer one (a "no deadline" of 1e9 s) would fail every query there.
MAX_TIMEOUT_S = 2_147_483.0


@dataclass(frozen=True, slots=True)
class ExecLimits:
    """How much one statement may use. Defaults fit Spider and BIRD (the largest Spider dev gold
    result has 92,450 rows)."""

    timeout_s: float = 30.0
    max_rows: int = 200_000
    max_bytes: int = 256 * _MIB
    #: SQLITE_LIMIT_LENGTH: the longest string or blob a statement may build (memory bombs).
    max_value_bytes: int = 64 * _MIB
    #: SQLITE_LIMIT_SQL_LENGTH.
    max_sql_chars: int = 100_000
    #: SQLITE_LIMIT_LIKE_PATTERN_LENGTH: long LIKE patterns can be very slow to match.
    max_like_pattern: int = 1_000
    #: How many virtual-machine steps pass between two deadline checks.
    progress_steps: int = 1_000
    #: After a cap is hit, keep stepping (without storing rows) until the statement ends or the
    #: deadline passes, so that a result too large to finish in time is a ``timeout`` (as a slow
    #: evaluator would see it) rather than an instant ``truncated``. Off: truncation is immediate.
    drain_after_cap: bool = False
    #: Memory of the engines that manage their own (SQLite's cap is the pool worker's address-space
    #: limit): DuckDB's ``memory_limit``; PostgreSQL's ``temp_file_limit``, with ``work_mem`` a
    #: sixteenth of it (one query may hold several sorts and hashes at once).
    memory_bytes: int = 512 * _MIB

    def __post_init__(self) -> None:
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:  # nan and inf fail here too
            raise ValueError(f"timeout_s must be > 0 and at most {MAX_TIMEOUT_S:,.0f} seconds, got {self.timeout_s}")
        if self.max_rows < 1 or self.max_bytes < 1:
            raise ValueError("max_rows and max_bytes must be >= 1")


DEFAULT_LIMITS = ExecLimits()
#: Session pragmas that make unordered scans run backwards: a result that depends on scan order (a LIMIT
#: without ORDER BY, a bare column of a group) changes under them.
REVERSED_SCANS: tuple[str, ...] = ("reverse_unordered_selects = ON",)

# Statement kinds a query may start with; anything else (PRAGMA, VACUUM, ATTACH, writes) is refused
# before SQLite sees it. The authorizer below is the real guard; this gate gives clear messages.
_ALLOWED_FIRST_WORDS = frozenset({"select", "with", "values"})
_LEADING_NOISE = re.compile(r"(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?(?:\*/|\Z)|\()*", re.DOTALL)
_FIRST_WORD = re.compile(r"[A-Za-z_]+")

_ALLOWED_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_FUNCTION,
        getattr(sqlite3, "SQLITE_RECURSIVE", 33),
    }
)
_DENIED_FUNCTIONS = frozenset({"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"})
# Introspection pragmas that take an argument but only read (also reachable as pragma_* functions).
_READ_PRAGMAS_WITH_ARGUMENT = frozenset(
    {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}
)


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg2 is None or (arg1 or "").lower() in _READ_PRAGMAS_WITH_ARGUMENT):
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def statement_gate(sql: str) -> str | None:
    """Why ``sql`` may not run, or None when it is a query (SELECT / WITH / VALUES).

    >>> statement_gate("  -- hi\\n (SELECT 1)") is None
    True
    >>> statement_gate("DELETE FROM t")
    'only SELECT, WITH and VALUES statements may run, found DELETE'
    """
    rest = sql[_LEADING_NOISE.match(sql).end() :]  # type: ignore[union-attr]  # the pattern matches ""
    if not rest.strip():
        return "empty SQL"
    word = _FIRST_WORD.match(rest)
    found = word.group().upper() if word else repr(rest[:10])
    if word is None or word.group().lower() not in _ALLOWED_FIRST_WORDS:
        return f"only SELECT, WITH and VALUES statements may run, found {found}"
    # PostgreSQL's planner takes memory superlinear in the nesting (2,000 nested subqueries: 1.2 GB in
    # the backend, beyond work_mem and beyond the worker's cap); the limit is the ODT's, on every engine,
    # so that a query's verdict does not depend on where it runs and no benchmark query comes near it.
    if parens_deeper_than(sql, MAX_PAREN_DEPTH):
        return f"parentheses nested deeper than {MAX_PAREN_DEPTH}"
    return None


def _lossy_text(data: bytes) -> str:
    # Databases in the wild hold invalid UTF-8; the result must still come back (as replacement chars).
    return data.decode("utf-8", errors="replace")


def open_readonly(
    db_path: str | Path, limits: ExecLimits = DEFAULT_LIMITS, pragmas: tuple[str, ...] = ()
) -> sqlite3.Connection:
    """Open ``db_path`` read-only with the authorizer, ``query_only`` and SQLite limits in place.

    ``pragmas`` (trusted text such as ``"reverse_unordered_selects = ON"``) are set before the
    authorizer, which refuses PRAGMA changes afterwards. Raises sqlite3.Error when the file cannot
    be opened (it is never created).
    """
    path = Path(db_path)
    if not path.is_file():
        raise sqlite3.OperationalError(f"database file not found: {path}")
    uri = readonly_uri(path)
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, factory=GuardedConnection)
    try:
        guard_printf(conn, limits.max_value_bytes)
        conn.execute("PRAGMA query_only = ON")
        for pragma in pragmas:
            conn.execute(f"PRAGMA {pragma}")
        setlimit: Callable[[int, int], int] | None = getattr(conn, "setlimit", None)  # Python >= 3.11
        if setlimit is not None:
            setlimit(_LIMIT_LENGTH, limits.max_value_bytes)
            setlimit(_LIMIT_SQL_LENGTH, limits.max_sql_chars)
            setlimit(_LIMIT_LIKE_PATTERN_LENGTH, limits.max_like_pattern)
            setlimit(_LIMIT_ATTACHED, 0)
        conn.set_authorizer(_authorize)
    except BaseException:
        conn.close()
        raise
    return conn


class _Closeable(Protocol):
    def close(self) -> None: ...


_Connection = TypeVar("_Connection", bound=_Closeable)


class OpenConnections(Generic[_Connection]):
    """The connections a runner keeps open between statements, by key (a location and limits); beyond
    ``most`` of them, the least recently used one is closed."""

    def __init__(self, most: int) -> None:
        self._open: OrderedDict[Hashable, _Connection] = OrderedDict()
        self._most = most

    def get(self, key: Hashable) -> _Connection | None:
        """The open connection under ``key`` (now the most recently used), or None."""
        conn = self._open.get(key)
        if conn is not None:
            self._open.move_to_end(key)
        return conn

    def add(self, key: Hashable, conn: _Connection) -> _Connection:
        """Keep ``conn`` under ``key`` (closing the least recently used one beyond ``most``); returns it."""
        self._open[key] = conn
        if len(self._open) > self._most:
            _, oldest = self._open.popitem(last=False)
            oldest.close()
        return conn

    def forget(self, key: Hashable) -> None:
        """Stop keeping the connection under ``key`` (closing it is the caller's business)."""
        self._open.pop(key, None)

    def close(self) -> None:
        for conn in self._open.values():
            conn.close()
        self._open.clear()


class Executor:
    """Runs statements in this process, reusing a few read-only connections per database file.

    Use it directly only for trusted or already-isolated work; model SQL belongs in
    :class:`~progress_sql.execution.pool.ExecutionPool`, which adds memory isolation and a hard kill.
    """

    def __init__(self, max_connections: int = 16, pragmas: tuple[str, ...] = ()) -> None:
        self._connections: OpenConnections[sqlite3.Connection] = OpenConnections(max_connections)
        self._pragmas = pragmas

    def close(self) -> None:
        self._connections.close()

    def _connection(self, db_path: str | Path, limits: ExecLimits) -> sqlite3.Connection:
        key = (str(db_path), limits)
        conn = self._connections.get(key)
        if conn is None:
            conn = self._connections.add(key, open_readonly(db_path, limits, self._pragmas))
        return conn

    def run(self, db_path: str | Path, sql: str, limits: ExecLimits = DEFAULT_LIMITS) -> ExecResult:
        """Execute ``sql`` on ``db_path``; never raises on bad SQL."""
        start = time.perf_counter()
        refusal = statement_gate(sql)
        if refusal is not None:
            return ExecResult("error", error=refusal, elapsed_s=time.perf_counter() - start)
        try:
            conn = self._connection(db_path, limits)
        except sqlite3.Error as error:
            return ExecResult("error", error=f"cannot open database: {error}", failed_outside=True)
        deadline = time.monotonic() + limits.timeout_s  # one budget, even when the query runs twice
        result = _run_on(conn, sql, limits, start, deadline, str)
        if result.status == "error" and "decode to UTF-8" in (result.error or ""):
            result = _run_on(conn, sql, limits, start, deadline, _lossy_text)
        return result


def execute(db_path: str | Path, sql: str, limits: ExecLimits = DEFAULT_LIMITS) -> ExecResult:
    """Run one statement on a fresh read-only connection in this process (no memory isolation)."""
    executor = Executor(max_connections=1)
    try:
        return executor.run(db_path, sql, limits)
    finally:
        executor.close()


def _run_on(
    conn: sqlite3.Connection,
    sql: str,
    limits: ExecLimits,
    start: float,
    deadline: float,
    text_factory: Callable[[bytes], Any],
) -> ExecResult:
    timed_out = False

    def past_deadline() -> int:
        nonlocal timed_out
        if time.monotonic() > deadline:
            timed_out = True
            return 1  # non-zero interrupts the running statement
        return 0

    conn.text_factory = text_factory
    start_statement(conn, deadline)
    conn.set_progress_handler(past_deadline, limits.progress_steps)
    rows: list[Row] = []
    columns: tuple[str, ...] = ()
    truncated = False
    try:
        cursor = conn.execute(sql)
        try:
            columns = tuple(d[0] for d in cursor.description or ())
            size = 0
            # Row by row (not fetchmany), so the byte cap stops a stream of huge values in time.
            for row in cursor:
                for value in row:  # inline and by class: this loop is the executor's hot path
                    size += len(value) if value.__class__ is str or value.__class__ is bytes else 8
                if len(rows) >= limits.max_rows or size > limits.max_bytes:
                    truncated = True
                    break
                rows.append(row)
            if truncated and limits.drain_after_cap:
                while cursor.fetchmany(4096):
                    pass
        finally:
            cursor.close()
    except (sqlite3.Error, ValueError, OverflowError, MemoryError, UnicodeError, RecursionError) as error:
        elapsed = time.perf_counter() - start
        rows.clear()
        stopped = guard_stopped(conn, str(error))
        if timed_out or stopped == PAST_DEADLINE:
            return ExecResult("timeout", error=f"exceeded {limits.timeout_s:g} s", elapsed_s=elapsed)
        if stopped is not None:  # a capped printf() refused its call: say why, not "function raised"
            return ExecResult("error", error=stopped[:500], elapsed_s=elapsed)
        if isinstance(error, MemoryError):
            return ExecResult("error", error="out of memory", elapsed_s=elapsed)
        return ExecResult("error", error=error_message(error), elapsed_s=elapsed)
    finally:
        conn.set_progress_handler(None, 0)
    return ExecResult(
        "ok",
        columns=columns,
        rows=tuple(rows),
        elapsed_s=time.perf_counter() - start,
        truncated=truncated,
    )


def error_message(error: BaseException) -> str:
    """An error as a result's ``error`` text: its message (else its class name), at most 500 characters."""
    text = str(error).strip() or type(error).__name__
    return text[:500]
