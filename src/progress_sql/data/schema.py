"""Database schemas as plain values: which tables exist and which columns each has.

The ODT uses a schema to qualify unqualified columns and to apply SQLite's rule for double-quoted
tokens (a double-quoted token that names no column is a string literal). Names are lower-cased.

>>> schema = Schema.from_mapping({"Singer": ["Singer_ID", "Name"]})
>>> schema.tables_with_column("name")
('singer',)
>>> schema.has_column("age")
False
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from progress_sql.errors import DatasetError


@dataclass(frozen=True, slots=True)
class Schema:
    """Tables and their columns, all lower-cased, in declaration order."""

    tables: Mapping[str, tuple[str, ...]]
    _column_index: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, list[str]] = {}
        for table, columns in self.tables.items():
            for column in columns:
                index.setdefault(column, []).append(table)
        object.__setattr__(self, "_column_index", {c: tuple(t) for c, t in index.items()})

    @classmethod
    def from_mapping(cls, tables: Mapping[str, Iterable[str]]) -> Schema:
        return cls({t.lower(): tuple(c.lower() for c in cols) for t, cols in tables.items()})

    def has_column(self, column: str) -> bool:
        return column.lower() in self._column_index

    def tables_with_column(self, column: str) -> tuple[str, ...]:
        return self._column_index.get(column.lower(), ())


def connect_readonly(db_path: str | Path) -> sqlite3.Connection:
    """Open a SQLite file read-only for reading its schema or contents (never creating it);
    DatasetError when it is missing or cannot be opened. Invalid UTF-8 text reads as replacement
    characters. Model SQL goes through :mod:`progress_sql.execution` instead, with its guards."""
    path = Path(db_path)
    if not path.is_file():
        raise DatasetError(f"database file not found: {path}")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise DatasetError(f"cannot open database {path}: {error}") from error
    connection.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return connection


def table_names(connection: sqlite3.Connection, *, views: bool = False) -> list[str]:
    """The user tables (and views, with ``views``) of an open database, in creation order."""
    kinds = "('table', 'view')" if views else "('table')"
    query = f"SELECT name FROM sqlite_master WHERE type IN {kinds} AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
    return [str(row[0]) for row in connection.execute(query)]


def read_schema(db_path: str | Path) -> Schema:
    """Read table and column names from a SQLite file, opened read-only."""
    path = Path(db_path)
    connection = connect_readonly(path)
    try:
        names = table_names(connection, views=True)
        tables = {
            name: [row[1] for row in connection.execute("SELECT * FROM pragma_table_info(?)", (name,))]
            for name in names
        }
    except sqlite3.DatabaseError as error:
        raise DatasetError(f"{path} is not a readable SQLite database: {error}") from error
    finally:
        connection.close()
    return Schema.from_mapping(tables)


def schema_from_spider_tables(entry: Mapping[str, Any]) -> Schema:
    """Build a schema from one entry of a Spider/BIRD ``tables.json`` file."""
    try:
        table_names = entry["table_names_original"]
        columns = entry["column_names_original"]
    except KeyError as error:
        raise DatasetError(f"tables.json entry lacks {error}") from error
    tables: dict[str, list[str]] = {name: [] for name in table_names}
    for table_index, column in columns:
        if table_index >= 0:
            tables[table_names[table_index]].append(column)
    return Schema.from_mapping(tables)
