"""What the fuzzer needs to know about an original database: its DDL, and per table the columns
(declared type, value kind, NOT NULL), the primary key, UNIQUE column sets, the foreign keys, and a
sample of the original values.

Read once per database, read-only. Values are read with a lossy UTF-8 decoder, since databases in
the wild hold invalid bytes.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from progress_sql.data.schema import Schema, connect_readonly
from progress_sql.errors import DatasetError
from progress_sql.types import SQLValue

#: Original values read per column (the first ones by rowid; enough for pools of a few values).
SAMPLE_VALUES = 2_000

#: Date and time layouts recognized in text columns, tried in order.
DATE_FORMATS: tuple[str, ...] = (
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%d/%m/%Y",
    "%B %d, %Y",
    "%d %B %Y",
    "%b %d, %Y",
)

ColumnKey = tuple[str, str]  # (table, column), lower-cased
Kind = Literal["integer", "real", "text", "date", "boolean"]


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    name: str
    declared: str
    kind: Kind
    notnull: bool
    #: The strftime layout of a ``date`` column (None for other kinds).
    date_format: str | None
    values: tuple[SQLValue, ...]


@dataclass(frozen=True, slots=True)
class ForeignKey:
    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TableInfo:
    name: str
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...]
    uniques: tuple[tuple[str, ...], ...]
    foreign_keys: tuple[ForeignKey, ...]
    rows: int
    #: Whether rowid exists (``WITHOUT ROWID`` tables have none).
    has_rowid: bool

    def column(self, name: str) -> ColumnInfo | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)


@dataclass(frozen=True, slots=True)
class DatabaseProfile:
    path: str
    #: CREATE statements (tables, indexes, views), in the original's order; triggers separately.
    ddl: tuple[str, ...]
    triggers: tuple[str, ...]
    tables: Mapping[str, TableInfo]  # by lower-cased name, original order

    def table(self, name: str) -> TableInfo | None:
        return self.tables.get(name.lower())


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def date_format(values: tuple[SQLValue, ...]) -> str | None:
    """The first layout of :data:`DATE_FORMATS` that parses every text value (None if none does).

    >>> date_format(("2020-01-31", "1999-12-01"))
    '%Y-%m-%d'
    >>> date_format(("2020-01-31", "soon")) is None
    True
    """
    texts = [v for v in values if isinstance(v, str)]
    if not texts or len(texts) < len([v for v in values if v is not None]):
        return None
    for layout in DATE_FORMATS:
        try:
            for text in texts[:200]:
                datetime.strptime(text, layout)
        except ValueError:
            continue
        return layout
    return None


def column_kind(declared: str, values: tuple[SQLValue, ...]) -> tuple[Kind, str | None]:
    """The value kind of a column from its declared type (SQLite's affinity rules) and its values.

    >>> column_kind("INTEGER", (1, 2))
    ('integer', None)
    >>> column_kind("varchar(20)", ("2001-02-03",))
    ('date', '%Y-%m-%d')
    >>> column_kind("bool", ("T", "F"))
    ('boolean', None)
    """
    lowered = declared.lower()
    present = tuple(v for v in values if v is not None)
    if "bool" in lowered or lowered.strip() == "bit":
        return "boolean", None
    if "int" in lowered:
        return "integer", None
    if any(word in lowered for word in ("real", "floa", "doub")):
        return "real", None
    layout = date_format(present)
    if layout is not None and ("date" in lowered or "time" in lowered or "char" in lowered or "text" in lowered):
        return "date", layout
    if any(word in lowered for word in ("char", "clob", "text")):
        return "text", None
    # Numeric or no affinity: the stored values decide.
    if layout is not None:
        return "date", layout
    if present and all(isinstance(v, int) for v in present):
        return "integer", None
    if present and all(isinstance(v, (int, float)) for v in present):
        return "real", None
    if not present and any(word in lowered for word in ("num", "dec")):
        return "real", None
    return "text", None


_WITHOUT_ROWID = re.compile(r"\bwithout\s+rowid\b", re.IGNORECASE)


def read_profile(db_path: str | Path) -> DatabaseProfile:
    """Read the profile of a SQLite file (read-only); DatasetError when it cannot be read."""
    path = Path(db_path)
    conn = connect_readonly(path)
    try:
        entries = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
            "ORDER BY rowid"
        ).fetchall()
        tables = {
            str(name).lower(): _table(conn, str(name), str(sql)) for kind, name, sql in entries if kind == "table"
        }
    except sqlite3.DatabaseError as error:
        raise DatasetError(f"{path} is not a readable SQLite database: {error}") from error
    finally:
        conn.close()
    ddl = tuple(str(sql) for kind, _, sql in entries if kind in ("table", "index", "view"))
    triggers = tuple(str(sql) for kind, _, sql in entries if kind == "trigger")
    return DatabaseProfile(str(path), ddl, triggers, tables)


def _table(conn: sqlite3.Connection, name: str, sql: str) -> TableInfo:
    quoted = _quote(name)
    info = conn.execute('SELECT name, type, "notnull", pk FROM pragma_table_info(?)', (name,)).fetchall()
    has_rowid = _WITHOUT_ROWID.search(sql) is None
    order = "ORDER BY rowid" if has_rowid else ""
    columns = []
    for column, declared, notnull, _pk in info:
        values = tuple(
            row[0] for row in conn.execute(f"SELECT {_quote(column)} FROM {quoted} {order} LIMIT {SAMPLE_VALUES}")
        )
        kind, layout = column_kind(str(declared or ""), values)
        columns.append(ColumnInfo(str(column), str(declared or ""), kind, bool(notnull), layout, values))
    primary_key = tuple(str(c) for c, _, _, pk in sorted(info, key=lambda r: r[3]) if pk)
    uniques = []
    for _seq, index, unique, *_rest in conn.execute(f"PRAGMA index_list({quoted})").fetchall():
        if unique:
            members = conn.execute("SELECT name FROM pragma_index_info(?)", (index,)).fetchall()
            if members and all(m[0] is not None for m in members):
                uniques.append(tuple(str(m[0]) for m in members))
    groups: dict[int, list[tuple[str, str, str | None]]] = {}
    for fk_id, _seq, parent, child, parent_column, *_ in conn.execute(f"PRAGMA foreign_key_list({quoted})"):
        groups.setdefault(int(fk_id), []).append((str(parent), str(child), parent_column))
    foreign_keys = tuple(
        ForeignKey(
            tuple(child for _, child, _ in members),
            members[0][0],
            # A missing parent column means the parent's primary key; SQLite's rule, filled in by the builder.
            tuple(parent_column if parent_column is not None else child for _, child, parent_column in members),
        )
        for _, members in sorted(groups.items())
    )
    rows = int(conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0])
    return TableInfo(name, tuple(columns), primary_key, tuple(uniques), foreign_keys, rows, has_rowid)


def profile_schema(profile: DatabaseProfile) -> Schema:
    """The table / column names of a profile, as the ODT's normalization wants them."""
    return Schema.from_mapping({t.name: [c.name for c in t.columns] for t in profile.tables.values()})


def root_column(profile: DatabaseProfile, table: str, column: str) -> ColumnKey:
    """Follow foreign keys from (table, column) to the column that has no parent (where its values
    are generated)."""
    seen = {(table, column)}
    while True:
        info = profile.table(table)
        parent = None if info is None else parent_of(profile, info, column)
        if parent is None or parent in seen:
            return table, column
        seen.add(parent)
        table, column = parent


def parent_of(profile: DatabaseProfile, info: TableInfo, column: str) -> ColumnKey | None:
    for fk in info.foreign_keys:
        parent_columns = resolve_parent_columns(profile, fk)
        for child, parent in zip(fk.columns, parent_columns or (), strict=False):
            if child.lower() == column.lower():
                return fk.parent.lower(), parent.lower()
    return None


def resolve_parent_columns(profile: DatabaseProfile, fk: ForeignKey) -> tuple[str, ...] | None:
    """The parent's columns a foreign key points at (its primary key when the declaration names
    none), or None when the parent table or a column does not exist."""
    parent = profile.table(fk.parent)
    if parent is None:
        return None
    columns = fk.parent_columns
    if any(parent.column(c) is None for c in columns) and len(parent.primary_key) == len(columns):
        columns = parent.primary_key
    if any(parent.column(c) is None for c in columns):
        return None
    return tuple(c for c in columns)


def table_order(profile: DatabaseProfile) -> list[TableInfo]:
    """Tables parents first (self references ignored; a cycle is broken in declaration order)."""
    remaining = list(profile.tables.values())
    placed: list[TableInfo] = []
    names: set[str] = set()
    while remaining:
        ready = next(
            (
                t
                for t in remaining
                if all(
                    fk.parent.lower() in names
                    or fk.parent.lower() == t.name.lower()
                    or profile.table(fk.parent) is None
                    for fk in t.foreign_keys
                )
            ),
            remaining[0],
        )
        remaining.remove(ready)
        placed.append(ready)
        names.add(ready.name.lower())
    return placed
