"""SQLite's ``printf()`` / ``format()`` with their widths capped before they run.

One call such as ``printf('%.*c', 2000000000, 'x')`` pads or repeats characters inside a single
virtual-machine step, where the progress handler never runs: it outran its deadline by minutes. A
connection opened through :func:`guard_printf` replaces both functions with one that adds up what
the format's widths and precisions would build, refuses more than :data:`MAX_PRINTF_PADDING`
characters (an error as data, with its reason), checks the statement's deadline on every call, and
otherwise hands the call to SQLite's own ``printf`` on a private in-memory connection, so an ordinary
call gives SQLite's result (docs/semantics.md#the-executor)."""

from __future__ import annotations

import math
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

from progress_sql.types import SQLValue

#: Most characters the widths and precisions of one call may pad or repeat to (about 0.2 s of
#: SQLite's padding on a slow core; Spider and BIRD golds use widths below 20).
MAX_PRINTF_PADDING = 1_000_000
#: What :attr:`GuardedConnection.stopped` holds when a guarded call found the deadline passed.
PAST_DEADLINE = "past the deadline"
# The functions replaced: format() is printf()'s other name from SQLite 3.38.
_NAMES = ("printf", "format") if sqlite3.sqlite_version_info >= (3, 38, 0) else ("printf",)
_LIMIT_LENGTH = 0
# What Python's sqlite3 reports for any failure in a user-defined function.
_CALLBACK_FAILED = "user-defined function raised exception"
# One directive as SQLite reads it (sqlite3_str_vappendf): flags, a width (digits or *), a precision
# (. then digits or *), l or ll, the conversion character. SQLite stops formatting at a conversion it
# does not know, so the scan stops there too.
_DIRECTIVE = re.compile(r"%[-+ #!0,]*(\*|[0-9]*)(?:\.(\*|[0-9]*))?(?:ll?)?(.?)", re.DOTALL)
_CONVERSIONS = frozenset("dsgzqQwcouxXfeEGinp%")
# Conversions whose precision truncates the argument instead of padding or repeating.
_TRUNCATING = frozenset("szqQw")
# Conversions that take no argument.
_NO_ARGUMENT = frozenset("n%")


class GuardedConnection(sqlite3.Connection):
    """A connection (``sqlite3.connect(..., factory=GuardedConnection)``) whose statement sets
    ``deadline`` (a ``time.monotonic()`` value) before it runs; a guarded call that stopped the
    statement leaves why in ``stopped`` (:data:`PAST_DEADLINE` or the refusal)."""

    deadline: float = math.inf
    stopped: str | None = None
    _formatter: sqlite3.Connection | None = None

    def close(self) -> None:
        if self._formatter is not None:
            self._formatter.close()
            self._formatter = None
        super().close()


def printf_padding(fmt: str, args: Sequence[SQLValue], as_integer: Callable[[SQLValue], int]) -> int:
    """How many characters the widths and precisions of ``fmt`` ask SQLite to pad or repeat, with
    ``args`` the call's other arguments (``*`` takes the next one, read by ``as_integer`` as SQLite
    reads it); an upper bound, since SQLite wraps widths beyond 2**31.

    >>> printf_padding("%5d|%-10s|%.3f|%.*c", (1, "x", 2.0, 7, "y"), int)
    25
    >>> printf_padding("%.99s%%", ("abc",), int)
    0
    """
    total = 0
    remaining = iter(args)
    for directive in _DIRECTIVE.finditer(fmt):
        width, precision, conversion = directive.groups()
        if conversion not in _CONVERSIONS:
            break
        for part, counted in ((width, True), (precision, conversion not in _TRUNCATING)):
            value = abs(as_integer(next(remaining, 0))) if part == "*" else _digits(part)
            total += value if counted else 0
        if conversion not in _NO_ARGUMENT:
            next(remaining, None)
    return total


def _lossy_text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _digits(part: str | None) -> int:
    """A width or precision written as digits (SQLite keeps 31 bits of it: more digits count as the most)."""
    if not part:
        return 0
    return int(part) if len(part) <= 10 else 2**31 - 1


def guard_printf(conn: GuardedConnection, max_value_bytes: int) -> None:
    """Replace ``printf`` and ``format`` on ``conn`` by the capped ones (see the module); the SQLite
    that formats has ``conn``'s longest-value limit, ``max_value_bytes``."""
    formatter = sqlite3.connect(":memory:", check_same_thread=False)
    setlimit: Callable[[int, int], int] | None = getattr(formatter, "setlimit", None)  # Python >= 3.11
    if setlimit is not None:
        setlimit(_LIMIT_LENGTH, max_value_bytes)
    formatter.text_factory = _lossy_text  # text from blobs: as the executor's lossy reading gives it
    conn._formatter = formatter

    def as_integer(value: SQLValue) -> int:
        found = formatter.execute("SELECT CAST(? AS INTEGER)", (value,)).fetchone()[0]
        return int(found or 0)

    def capped_printf(*args: Any) -> Any:
        if time.monotonic() > conn.deadline:
            conn.stopped = PAST_DEADLINE
            raise sqlite3.OperationalError(PAST_DEADLINE)
        try:
            return _formatted(formatter, args, as_integer)
        except Exception as error:  # the refusal, or SQLite's own message ("string or blob too big")
            conn.stopped = str(error).strip() or type(error).__name__
            raise

    for name in _NAMES:
        conn.create_function(name, -1, capped_printf, deterministic=True)


def _formatted(formatter: sqlite3.Connection, args: tuple[Any, ...], as_integer: Callable[[SQLValue], int]) -> Any:
    """SQLite's printf of ``args`` on ``formatter``, refused when its widths ask for too much."""
    fmt = args[0].decode("utf-8", "replace") if args and isinstance(args[0], bytes) else args[0] if args else None
    if isinstance(fmt, str):  # a number or NULL holds no directive
        padding = printf_padding(fmt, args[1:], as_integer)
        if padding > MAX_PRINTF_PADDING:
            raise sqlite3.OperationalError(
                f"printf() refused: its widths and precisions ask for {padding:,} characters "
                f"(at most {MAX_PRINTF_PADDING:,})"
            )
    placeholders = ", ".join("?" * len(args))
    return formatter.execute(f"SELECT printf({placeholders})", args).fetchone()[0]


def guard_stopped(conn: sqlite3.Connection, error: str) -> str | None:
    """Why a guarded call stopped the statement that just failed on ``conn`` with ``error`` (None: it
    did not). Python's sqlite3 reads every text argument as UTF-8 before the guard runs, so text that
    is not (SQLite's own printf would copy its bytes) fails the call: said so here."""
    if not isinstance(conn, GuardedConnection):
        return None
    if conn.stopped is None and error == _CALLBACK_FAILED:
        return "printf() could not read its arguments (text that is not valid UTF-8)"
    return conn.stopped


def start_statement(conn: sqlite3.Connection, deadline: float) -> None:
    """Before a statement runs on ``conn``: its deadline, and no stop left over from the one before."""
    if isinstance(conn, GuardedConnection):
        conn.deadline = deadline
        conn.stopped = None
