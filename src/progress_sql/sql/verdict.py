"""The engine's own verdict on a statement. SQLite's: does SQLite compile it against the schema? sqlglot accepts SQL
that SQLite rejects (``SELECT FROM t``, a GROUP BY without keys, ``DISTINCT ON``, ``FETCH FIRST``,
``> ALL (...)``); the ODT asks SQLite before it profiles (docs/odt.md#the-parser).

The statement is compiled with ``EXPLAIN`` (nothing runs) on an empty in-memory database holding the
schema's tables with untyped columns, kept for the process and lent to one thread at a time (threads that
live for one batch, as the coalescer's players do, find the schema compiled by an earlier one).

>>> schema = {"singer": ("singer_id", "name", "age")}
>>> sqlite_rejection("SELECT name FROM singer WHERE age > 30", schema) is None
True
>>> sqlite_rejection("SELECT FROM singer", schema)
'SQLite: near "FROM": syntax error'
>>> sqlite_rejection("SELECT nickname FROM singer", schema)
'SQLite: no such column: nickname'

PostgreSQL's and DuckDB's verdicts are their own parsers' (syntax only: libpg_query through pglast,
DuckDB's ``extract_statements``); :func:`engine_rejection` picks one by sqlglot dialect.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from progress_sql.jsonio import surrogate_refusal
from progress_sql.sql.parse import strip_sql

#: Tables and their columns: ``progress_sql.data.schema.Schema.tables`` is one.
TableColumns = Mapping[str, Sequence[str]]

#: Schemas kept compiled (an environment process sees a few dozen databases).
MAX_CACHED_SCHEMAS = 64
#: Idle connections kept per schema: as many as threads judge at once against one database, bounded.
MAX_IDLE_PER_KEY = 8


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def schema_ddl(tables: TableColumns) -> list[str]:
    """``CREATE TABLE`` statements for ``tables`` (untyped columns: enough to compile queries).

    >>> schema_ddl({"t": ("a", "b")})
    ['CREATE TABLE "t" ("a", "b")']
    """
    statements = []
    for table, columns in tables.items():
        unique = list(dict.fromkeys(columns)) or ["_"]
        statements.append(f"CREATE TABLE {_quote(table)} ({', '.join(_quote(c) for c in unique)})")
    return statements


class _Lending:
    """In-memory connections kept for the whole process, lent to one thread at a time (``sqlite3``
    connections may change threads but not be used by two at once), by key: an LRU of
    :data:`MAX_CACHED_SCHEMAS` keys, each with up to :data:`MAX_IDLE_PER_KEY` idle connections. An entry
    holds its owner (the schema), so a key made from ``id(owner)`` is never reused while it exists."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: OrderedDict[object, tuple[object, list[Any]]] = OrderedDict()

    @contextlib.contextmanager
    def lent(self, key: object, owner: object, make: Callable[[], Any]) -> Iterator[Any]:
        conn = None
        with self._lock:
            entry = self._idle.get(key)
            if entry is not None and entry[1]:
                conn = entry[1].pop()
        if conn is None:
            conn = make()  # outside the lock: compiling a large schema takes a while
        try:
            yield conn
        finally:
            self._give_back(key, owner, conn)

    def _give_back(self, key: object, owner: object, conn: Any) -> None:
        closing: list[Any] = []
        with self._lock:
            idle = self._idle.setdefault(key, (owner, []))[1]
            self._idle.move_to_end(key)
            (idle if len(idle) < MAX_IDLE_PER_KEY else closing).append(conn)
            while len(self._idle) > MAX_CACHED_SCHEMAS:
                closing.extend(self._idle.popitem(last=False)[1][1])
        for stale in closing:
            stale.close()


_LENDING = _Lending()


def _compiled(tables: TableColumns) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    for statement in schema_ddl(tables):
        try:
            conn.execute(statement)
        except sqlite3.Error:  # a name SQLite cannot take as a table (e.g. sqlite_*): leave it out
            continue
    return conn


def sqlite_rejection(sql: str, tables: TableColumns) -> str | None:
    """Why SQLite refuses to compile ``sql`` against ``tables`` (None when it compiles).

    Syntax errors and unknown tables, columns or functions count; what depends on the data (a
    runtime error, a timeout) cannot show here.
    """
    with _LENDING.lent(id(tables), tables, lambda: _compiled(tables)) as conn:
        try:
            conn.execute("EXPLAIN " + strip_sql(sql)).close()
        except sqlite3.Warning as error:  # more than one statement
            return f"SQLite: {error}"
        except sqlite3.Error as error:
            return f"SQLite: {error}"
        except (ValueError, OverflowError) as error:  # e.g. a NUL character in the text
            return f"SQLite: {error}"
    return None


def postgres_rejection(sql: str, tables: TableColumns) -> str | None:
    """Why PostgreSQL's parser (libpg_query, through pglast) refuses ``sql`` (syntax only)."""
    from pglast import parser

    try:
        statements = parser.parse_sql(strip_sql(sql))
    except parser.ParseError as error:
        return f"PostgreSQL: {error}"
    if len(statements) != 1:
        return f"PostgreSQL: expected exactly one statement, found {len(statements)}"
    return None


def duckdb_rejection(sql: str, tables: TableColumns) -> str | None:
    """Why DuckDB's parser refuses ``sql`` (syntax only; parser-only in-memory connections, kept)."""
    import duckdb

    def made() -> Any:
        return duckdb.connect(":memory:", config={"enable_external_access": False})

    with _LENDING.lent("duckdb", None, made) as conn:
        try:
            statements = conn.extract_statements(strip_sql(sql))
        except duckdb.Error as error:
            return f"DuckDB: {str(error).splitlines()[0] if str(error) else type(error).__name__}"
    if len(statements) != 1:
        return f"DuckDB: expected exactly one statement, found {len(statements)}"
    return None


#: The verdict of each sqlglot dialect's engine.
VERDICTS: dict[str, Callable[[str, TableColumns], str | None]] = {
    "sqlite": sqlite_rejection,
    "postgres": postgres_rejection,
    "duckdb": duckdb_rejection,
}


#: SQLite's messages for SQL its parser refuses (tokenizer and grammar), as opposed to those of name
#: resolution ("no such column", "no such table", "no such function", "wrong number of arguments", ...).
_SQLITE_SYNTAX = ("syntax error", "incomplete input", "unrecognized token", "should come after", "one statement")
_NO_TABLES: TableColumns = {}


def syntax_rejection(sql: str, dialect: str = "sqlite") -> str | None:
    """Why the parser of ``dialect``'s engine refuses ``sql``: syntax only, no schema (JSQLParser's kind
    of verdict). SQLite parses a whole statement before it resolves a name, so a statement compiled on
    an empty database fails with a syntax message exactly when its syntax is wrong; PostgreSQL's and
    DuckDB's verdicts are their parsers' already.

    >>> syntax_rejection("SELECT nmae FROM singer WHERE age > 30") is None
    True
    >>> syntax_rejection("SELECT FROM singer")
    'SQLite: near "FROM": syntax error'
    """
    if dialect != "sqlite":
        return engine_rejection(sql, _NO_TABLES, dialect)
    rejection = sqlite_rejection(sql, _NO_TABLES)
    if rejection is None or not any(marker in rejection for marker in _SQLITE_SYNTAX):
        return None
    return rejection


def engine_rejection(sql: str, tables: TableColumns, dialect: str = "sqlite") -> str | None:
    """Why the engine of ``dialect`` refuses ``sql`` (None when it accepts it, or when that dialect
    has no verdict here: sqlglot's parse is then the only judge).

    >>> engine_rejection("SELECT FROM singer", {"singer": ("name",)}, "sqlite")
    'SQLite: near "FROM": syntax error'
    """
    verdict = VERDICTS.get(dialect)
    if verdict is None:
        return None
    # every engine takes UTF-8 text: a lone surrogate is refused here, not by the engine's binding
    return surrogate_refusal(sql) or verdict(sql, tables)
