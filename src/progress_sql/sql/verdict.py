"""SQLite's own verdict on a statement: does SQLite compile it against the schema? sqlglot accepts SQL
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
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

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
