"""What every execution engine provides (:class:`Engine`), the per-process runner it makes
(:class:`EngineRunner`), what the server engines' runners share (a timer at the deadline, fetching
under the caps), and the value conversions the engines share: every engine hands back
SQLite's value classes (``int | float | str | bytes | None``) so that one comparison preset judges a
result the same way whatever engine produced it (docs/semantics.md#engines-and-normalisation)."""

from __future__ import annotations

import datetime
import decimal
import threading
import uuid
from collections.abc import Callable
from typing import Any, Literal, Protocol

from progress_sql.execution.executor import ExecLimits
from progress_sql.types import ExecResult, Row, SQLValue

EngineName = Literal["sqlite", "postgresql", "duckdb"]
ENGINE_NAMES: tuple[EngineName, ...] = ("sqlite", "postgresql", "duckdb")
#: Rows per fetch from a driver's cursor.
FETCH_ROWS = 1_000


class EngineRunner(Protocol):
    """Runs statements in the current process (a pool worker), keeping connections between jobs."""

    def run(self, location: str, sql: str, limits: ExecLimits) -> ExecResult:
        """Execute ``sql`` at ``location``; never raises on bad SQL (errors and timeouts are statuses)."""
        ...

    def close(self) -> None: ...


class Engine(Protocol):
    """One database engine: how a location names a database on it, how SQL runs there safely, and
    what it is called in prompts and in sqlglot."""

    @property
    def name(self) -> EngineName: ...

    @property
    def display_name(self) -> str:
        """How prompts name the engine ("SQLite", "PostgreSQL", "DuckDB")."""
        ...

    @property
    def dialect(self) -> str:
        """The engine's sqlglot dialect."""
        ...

    def claims(self, location: str) -> bool:
        """Whether ``location`` (a path or a connection string) names a database of this engine."""
        ...

    def runner(self) -> EngineRunner:
        """A new runner for this process (the driver is imported here, not at module import)."""
        ...

    def content_identity(self, location: str) -> str:
        """A digest of the database's contents (gold-cache keys; trusted code, not the pool)."""
        ...

    def locate(self, backend_db: str, db_id: str) -> str:
        """The location of database ``db_id`` under the ported collection ``backend_db``."""
        ...

    def public_location(self, location: str) -> str:
        """``location`` as it may be written to files and logs: never with a password."""
        ...


def decimal_value(value: decimal.Decimal) -> int | float:
    """A NUMERIC / DECIMAL as SQLite would hold it: integral values without a fraction part as int,
    others as the nearest float (PostgreSQL's 16+ significant digits round back to SQLite's double).

    >>> decimal_value(decimal.Decimal("6")), decimal_value(decimal.Decimal("2.3333333333333333"))
    (6, 2.3333333333333335)
    >>> decimal_value(decimal.Decimal("3.00"))
    3.0
    """
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent >= 0:
        return int(value)
    return float(value)


def plain_value(value: Any) -> SQLValue:
    """Any driver value as a SQLite value class (the table per engine: docs/semantics.md).

    >>> plain_value(True), plain_value(datetime.date(2020, 1, 2)), plain_value(memoryview(b"ab"))
    (1, '2020-01-02', b'ab')
    >>> plain_value(datetime.datetime(2020, 1, 2, 3, 4, 5))
    '2020-01-02 03:04:05'
    """
    kind = value.__class__
    if value is None or kind is int or kind is str or kind is float or kind is bytes:
        return value  # type: ignore[no-any-return]
    if isinstance(value, bool):  # before int: bool is an int subclass
        return int(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, decimal.Decimal):
        return decimal_value(value) if value.is_finite() else float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(value)  # lists, structs, JSON, intervals: their text


def fetch_capped(cursor: Any, limits: ExecLimits, rows: list[Row]) -> bool:
    """Append a driver cursor's rows, as SQLite values and :data:`FETCH_ROWS` at a time, to ``rows``
    (the caller's list: it empties it on an error, freeing the memory at once); True when the row or
    byte cap cut them short."""
    size = 0
    while True:
        batch = cursor.fetchmany(FETCH_ROWS)
        if not batch:
            return False
        for raw in batch:
            row = tuple(plain_value(v) for v in raw)
            for value in row:
                size += len(value) if value.__class__ is str or value.__class__ is bytes else 8
            if len(rows) >= limits.max_rows or size > limits.max_bytes:
                return True
            rows.append(row)


class Deadline:
    """A timer that calls ``interrupt`` (the driver's cancel) ``seconds`` after :meth:`start` and
    remembers that it did (``fired``): how a server engine's runner tells a timeout from an error.

    After :meth:`cancel` returns no interrupt is sent: a timer that fired as the statement finished has
    either sent its cancel already (cancel waits for it) or will not send one. Without this a late
    cancel reached the connection's next statement, which then failed with "canceling statement due
    to user request" as an error (seen under load: tests/execution/test_engine_adversarial.py)."""

    def __init__(self, seconds: float, interrupt: Callable[[], object]) -> None:
        self.fired = threading.Event()
        self._lock = threading.Lock()
        self._finished = False

        def fire() -> None:
            with self._lock:
                if self._finished:
                    return
                self.fired.set()
                interrupt()

        self._timer = threading.Timer(seconds, fire)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def cancel(self) -> None:
        with self._lock:  # waits for a firing interrupt to be sent
            self._finished = True
        self._timer.cancel()
