"""The engine's own verdict on a statement. SQLite's: does SQLite compile it against the schema? sqlglot accepts SQL
that SQLite rejects (``SELECT FROM t``, a GROUP BY without keys, ``DISTINCT ON``, ``FETCH FIRST``,
``> ALL (...)``); the ODT asks SQLite before it profiles (docs/odt.md#the-parser).

The statement is compiled with ``EXPLAIN`` (nothing runs) on an empty in-memory database holding the
schema's tables with untyped columns, one per schema and thread, cached.

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

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from progress_sql.jsonio import surrogate_refusal
from progress_sql.sql.parse import strip_sql

#: Tables and their columns: ``progress_sql.data.schema.Schema.tables`` is one.
TableColumns = Mapping[str, Sequence[str]]

#: Schemas kept compiled per thread (an environment process sees a few dozen databases).
MAX_CACHED_SCHEMAS = 64


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


class _Connections(threading.local):
    """One small LRU of schema connections per thread (sqlite3 connections are not shared)."""

    def __init__(self) -> None:
        self.by_schema: OrderedDict[int, tuple[TableColumns, sqlite3.Connection]] = OrderedDict()


_LOCAL = _Connections()


def _connection(tables: TableColumns) -> sqlite3.Connection:
    # Keyed by identity (schemas are built once per database and reused); the entry keeps the schema
    # alive, so an id is never reused while its entry exists.
    key = id(tables)
    cache = _LOCAL.by_schema
    entry = cache.get(key)
    if entry is not None and entry[0] is tables:
        cache.move_to_end(key)
        return entry[1]
    conn = sqlite3.connect(":memory:", isolation_level=None)
    for statement in schema_ddl(tables):
        try:
            conn.execute(statement)
        except sqlite3.Error:  # a name SQLite cannot take as a table (e.g. sqlite_*): leave it out
            continue
    cache[key] = (tables, conn)
    if len(cache) > MAX_CACHED_SCHEMAS:
        _, (_, oldest) = cache.popitem(last=False)
        oldest.close()
    return conn


def sqlite_rejection(sql: str, tables: TableColumns) -> str | None:
    """Why SQLite refuses to compile ``sql`` against ``tables`` (None when it compiles).

    Syntax errors and unknown tables, columns or functions count; what depends on the data (a
    runtime error, a timeout) cannot show here.
    """
    conn = _connection(tables)
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
    """Why DuckDB's parser refuses ``sql`` (syntax only; a parser-only in-memory connection per thread)."""
    import duckdb

    conn = _LOCAL.__dict__.get("duckdb")
    if conn is None:
        conn = _LOCAL.__dict__["duckdb"] = duckdb.connect(":memory:", config={"enable_external_access": False})
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
