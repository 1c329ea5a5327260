"""``db_details`` for prompts: the schema of a SQLite file as DDL with sample values.

One ``CREATE TABLE`` per table, in creation order, with column types, primary and foreign keys and a
few distinct sample values per column (strings shortened). Deterministic for a given database file.
Profiles: ``full`` (DDL with samples), ``compact`` (``table(col, col, ...)`` per line, for tiny
models and short contexts) and ``none`` (no schema at all).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from progress_sql.data.schema import connect_readonly, table_names
from progress_sql.errors import DatasetError

SchemaProfile = Literal["full", "compact", "none"]
SCHEMA_PROFILES: tuple[SchemaProfile, ...] = ("full", "compact", "none")


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    name: str
    type: str
    primary_key: bool
    samples: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ForeignKey:
    columns: tuple[str, ...]
    table: str
    references: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TableInfo:
    name: str
    columns: tuple[ColumnInfo, ...]
    foreign_keys: tuple[ForeignKey, ...]


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _sample_text(value: object, max_chars: int) -> str:
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    if isinstance(value, str):
        text = value if len(value) <= max_chars else value[: max_chars - 3] + "..."
        return "'" + text.replace("'", "''").replace("\n", " ") + "'"
    return repr(value)


def read_tables(db_path: str | Path, samples: int = 3, max_sample_chars: int = 40) -> tuple[TableInfo, ...]:
    """Read tables, columns, keys and sample values from a SQLite file opened read-only."""
    path = Path(db_path)
    connection = connect_readonly(path)
    try:
        names = table_names(connection)
        return tuple(_table(connection, name, samples, max_sample_chars) for name in names)
    except sqlite3.DatabaseError as error:
        raise DatasetError(f"{path} is not a readable SQLite database: {error}") from error
    finally:
        connection.close()


def _table(connection: sqlite3.Connection, name: str, samples: int, max_chars: int) -> TableInfo:
    columns = []
    for _, column, declared, _, _, pk in connection.execute("SELECT * FROM pragma_table_info(?)", (name,)):
        values: tuple[str, ...] = ()
        if samples > 0:
            rows = connection.execute(
                f"SELECT DISTINCT {_quote(column)} FROM {_quote(name)} WHERE {_quote(column)} IS NOT NULL LIMIT ?",
                (samples,),
            )
            values = tuple(_sample_text(row[0], max_chars) for row in rows)
        columns.append(ColumnInfo(column, declared or "", bool(pk), values))
    grouped: dict[int, list[tuple[str, str, str]]] = {}
    for row in connection.execute("SELECT * FROM pragma_foreign_key_list(?)", (name,)):
        grouped.setdefault(row[0], []).append((row[3], row[2], row[4] or ""))
    foreign_keys = tuple(
        ForeignKey(tuple(c for c, _, _ in parts), parts[0][1], tuple(r for _, _, r in parts))
        for _, parts in sorted(grouped.items())
    )
    return TableInfo(name, tuple(columns), foreign_keys)


def render_tables(tables: tuple[TableInfo, ...], profile: SchemaProfile = "full") -> str:
    """Render tables in a prompt profile.

    >>> table = TableInfo("singer", (ColumnInfo("singer_id", "INTEGER", True, ("1", "2")),
    ...                              ColumnInfo("name", "TEXT", False, ("'Joe'",))), ())
    >>> print(render_tables((table,)))
    CREATE TABLE singer (
      singer_id INTEGER, -- examples: 1, 2
      name TEXT, -- examples: 'Joe'
      PRIMARY KEY (singer_id)
    );
    >>> render_tables((table,), "compact")
    'singer(singer_id, name)'
    """
    if profile == "none":
        return ""
    if profile == "compact":
        return "\n".join(f"{t.name}({', '.join(c.name for c in t.columns)})" for t in tables)
    return "\n\n".join(_create_table(table) for table in tables)


def _create_table(table: TableInfo) -> str:
    lines = []
    for column in table.columns:
        line = f"  {column.name} {column.type}".rstrip() + ","
        if column.samples:
            line += f" -- examples: {', '.join(column.samples)}"
        lines.append(line)
    keys = [c.name for c in table.columns if c.primary_key]
    constraints = [f"  PRIMARY KEY ({', '.join(keys)})"] if keys else []
    constraints += [
        f"  FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.table}({', '.join(fk.references)})"
        for fk in table.foreign_keys
    ]
    if constraints:
        body = [*lines, *(f"{c}," for c in constraints[:-1]), constraints[-1]]
    else:
        body = [*lines[:-1], _drop_trailing_comma(lines[-1])] if lines else []
    return f"CREATE TABLE {table.name} (\n" + "\n".join(body) + "\n);"


def _drop_trailing_comma(line: str) -> str:
    head, comma, comment = line.partition(", -- ")
    if comma:
        return head + " -- " + comment
    return line[:-1] if line.endswith(",") else line


def db_details(db_path: str | Path, profile: SchemaProfile = "full", samples: int = 3) -> str:
    """The ``{db_details}`` of the round-1 prompt for a SQLite file."""
    if profile == "none":
        return ""
    return render_tables(read_tables(db_path, samples=samples if profile == "full" else 0), profile)
