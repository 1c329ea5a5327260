"""What a SQLite file declares and holds, read once, read-only: the one database reader of the package
(:func:`read_profile`; docs/data.md#reading-a-database). Model SQL never runs here.

>>> quote_identifier('a"b')
'"a""b"'
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from progress_sql.errors import DatasetError
from progress_sql.types import SQLValue

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

#: The kind of values a column holds (see :func:`column_kind`).
Kind = Literal["integer", "real", "text", "date", "boolean"]


@dataclass(frozen=True, slots=True)
class ValueSample:
    """Which stored values :func:`read_profile` reads per column of a table (views get none).

    ``first_rows``: the first ``limit`` rows' values by rowid, NULLs included (how the fuzzer sees
    a column); ``distinct``: up to ``limit`` distinct non-NULL values in the order SQLite finds
    them; ``distinct_sorted``: the ``limit`` smallest distinct non-NULL values, ascending.
    ``count_distinct`` also counts the column's distinct non-NULL values (a scan per column).
    """

    limit: int
    how: Literal["first_rows", "distinct", "distinct_sorted"] = "first_rows"
    count_distinct: bool = False


@dataclass(frozen=True, slots=True)
class ColumnInfo:
    name: str
    declared: str
    notnull: bool = False
    #: Part of the table's primary key.
    primary_key: bool = False
    #: Part of a primary key or of a foreign key, on either side (an identifier, not an attribute).
    key: bool = False
    #: Inferred from the declared type and the values read (:func:`column_kind`).
    kind: Kind = "text"
    #: The strftime layout of a ``date`` column (None for other kinds).
    date_format: str | None = None
    #: The sample asked for (:class:`ValueSample`); empty when none was.
    values: tuple[SQLValue, ...] = ()
    #: Distinct non-NULL values, when counted.
    distinct: int | None = None


@dataclass(frozen=True, slots=True)
class ForeignKey:
    """``columns`` of the child table reference ``parent_columns`` of ``parent``; ``parent_columns``
    is empty when the declaration names none (SQLite then means the parent's primary key)."""

    columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TableInfo:
    name: str
    columns: tuple[ColumnInfo, ...]
    #: The primary key's columns in key order.
    primary_key: tuple[str, ...] = ()
    uniques: tuple[tuple[str, ...], ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    #: Row count, when counted.
    rows: int | None = None
    #: Whether rowid exists (``WITHOUT ROWID`` tables and views have none).
    has_rowid: bool = True
    #: A view (read only when asked; columns only).
    is_view: bool = False
    _by_name: Mapping[str, ColumnInfo] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {c.name.lower(): c for c in reversed(self.columns)})

    def column(self, name: str) -> ColumnInfo | None:
        """The column called ``name`` (any case)."""
        return self._by_name.get(name.lower())


@dataclass(frozen=True, slots=True)
class DatabaseProfile:
    path: str
    #: CREATE statements (tables, indexes, views), in the original's order; triggers separately.
    ddl: tuple[str, ...]
    triggers: tuple[str, ...]
    #: By lower-cased name, in creation order (views among them only when asked for).
    tables: Mapping[str, TableInfo]

    def table(self, name: str) -> TableInfo | None:
        return self.tables.get(name.lower())


def quote_identifier(name: str) -> str:
    """``name`` as a double-quoted SQLite identifier."""
    return '"' + name.replace('"', '""') + '"'


#: Set to ``1``, databases open with SQLite's ``immutable=1`` as well as read-only: no locks taken, no
#: check for changes by other processes. For database files that never change while they are read on a
#: network filesystem, where locks are slow or unsupported (docs/scaling.md); a Ray run forwards it to
#: every shard.
IMMUTABLE_ENV = "PROGRESS_SQL_SQLITE_IMMUTABLE"


def readonly_uri(path: str | Path) -> str:
    """The SQLite URI that opens ``path`` read-only (and immutable with ``PROGRESS_SQL_SQLITE_IMMUTABLE=1``).

    >>> readonly_uri("/data/a b.sqlite")
    'file:///data/a%20b.sqlite?mode=ro'
    """
    uri = f"{Path(path).resolve().as_uri()}?mode=ro"
    return uri + "&immutable=1" if os.environ.get(IMMUTABLE_ENV) == "1" else uri


def connect_readonly(db_path: str | Path) -> sqlite3.Connection:
    """Open a SQLite file read-only for reading its schema or contents (never creating it);
    DatasetError when it is missing or cannot be opened. Invalid UTF-8 text reads as replacement
    characters. Model SQL goes through :mod:`progress_sql.execution` instead, with its guards."""
    path = Path(db_path)
    if not path.is_file():
        raise DatasetError(f"database file not found: {path}")
    try:
        connection = sqlite3.connect(readonly_uri(path), uri=True)
    except sqlite3.Error as error:
        raise DatasetError(f"cannot open database {path}: {error}") from error
    connection.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return connection


def date_format(values: tuple[SQLValue, ...]) -> str | None:
    """The first layout of :data:`DATE_FORMATS` that parses every text value (None if none does)."""
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
    """The value kind of a column from its declared type (SQLite's affinity rules) and its values."""
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


def read_profile(
    db_path: str | Path, values: ValueSample | None = None, *, views: bool = False, row_counts: bool = False
) -> DatabaseProfile:
    """Read the profile of a SQLite file (read-only): tables, and views too with ``views``; a sample
    of each table column's values per ``values``; row counts with ``row_counts``. DatasetError when
    the file is missing or is not a readable SQLite database."""
    path = Path(db_path)
    conn = connect_readonly(path)
    try:
        entries = [
            (str(kind), str(name), str(sql))
            for kind, name, sql in conn.execute(
                "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
                "ORDER BY rowid"
            )
        ]
        relations = [(kind, name, sql) for kind, name, sql in entries if kind == "table" or (views and kind == "view")]
        foreign_keys = {name: _foreign_keys(conn, name) for kind, name, _ in relations if kind == "table"}
        # Columns on either end of a foreign key are keys: (lower-cased table, lower-cased column).
        linked: set[tuple[str, str]] = set()
        for name, fks in foreign_keys.items():
            for fk in fks:
                linked.update((name.lower(), c.lower()) for c in fk.columns)
                linked.update((fk.parent.lower(), c.lower()) for c in fk.parent_columns)
        tables = {
            name.lower(): (
                _view(conn, name)
                if kind == "view"
                else _table(conn, name, sql, foreign_keys[name], linked, values, row_counts)
            )
            for kind, name, sql in relations
        }
    except sqlite3.DatabaseError as error:
        raise DatasetError(f"{path} is not a readable SQLite database: {error}") from error
    finally:
        conn.close()
    ddl = tuple(sql for kind, _, sql in entries if kind in ("table", "index", "view"))
    triggers = tuple(sql for kind, _, sql in entries if kind == "trigger")
    return DatabaseProfile(str(path), ddl, triggers, tables)


def _foreign_keys(conn: sqlite3.Connection, table: str) -> tuple[ForeignKey, ...]:
    groups: dict[int, list[tuple[str, str, str | None]]] = {}
    for fk_id, _seq, parent, child, parent_column, *_ in conn.execute(
        f"PRAGMA foreign_key_list({quote_identifier(table)})"
    ):
        groups.setdefault(int(fk_id), []).append((str(parent), str(child), parent_column))
    return tuple(
        ForeignKey(
            tuple(child for _, child, _ in members),
            members[0][0],
            tuple(str(p) for _, _, p in members) if all(p is not None for _, _, p in members) else (),
        )
        for _, members in sorted(groups.items())
    )


def _sample(
    conn: sqlite3.Connection, table: str, column: str, has_rowid: bool, sample: ValueSample
) -> tuple[SQLValue, ...]:
    quoted, name = quote_identifier(table), quote_identifier(column)
    if sample.how == "first_rows":
        order = "ORDER BY rowid" if has_rowid else ""
        query = f"SELECT {name} FROM {quoted} {order} LIMIT {sample.limit}"
    else:
        order = "ORDER BY 1 " if sample.how == "distinct_sorted" else ""
        query = f"SELECT DISTINCT {name} FROM {quoted} WHERE {name} IS NOT NULL {order}LIMIT {sample.limit}"
    return tuple(row[0] for row in conn.execute(query))


def _table(
    conn: sqlite3.Connection,
    name: str,
    sql: str,
    foreign_keys: tuple[ForeignKey, ...],
    linked: set[tuple[str, str]],
    sample: ValueSample | None,
    row_counts: bool,
) -> TableInfo:
    quoted = quote_identifier(name)
    info = conn.execute('SELECT name, type, "notnull", pk FROM pragma_table_info(?)', (name,)).fetchall()
    has_rowid = _WITHOUT_ROWID.search(sql) is None
    columns = []
    for column, declared, notnull, pk in info:
        column, declared = str(column), str(declared or "")
        values = _sample(conn, name, column, has_rowid, sample) if sample is not None and sample.limit > 0 else ()
        distinct = None
        if sample is not None and sample.count_distinct:
            name_sql = quote_identifier(column)
            distinct = int(conn.execute(f"SELECT count(DISTINCT {name_sql}) FROM {quoted}").fetchone()[0])
        kind, layout = column_kind(declared, values)
        key = bool(pk) or (name.lower(), column.lower()) in linked
        columns.append(ColumnInfo(column, declared, bool(notnull), bool(pk), key, kind, layout, values, distinct))
    primary_key = tuple(str(c) for c, _, _, pk in sorted(info, key=lambda r: r[3]) if pk)
    uniques = []
    for _seq, index, unique, *_rest in conn.execute(f"PRAGMA index_list({quoted})").fetchall():
        if unique:
            members = conn.execute("SELECT name FROM pragma_index_info(?)", (index,)).fetchall()
            if members and all(m[0] is not None for m in members):
                uniques.append(tuple(str(m[0]) for m in members))
    rows = int(conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0]) if row_counts else None
    return TableInfo(name, tuple(columns), primary_key, tuple(uniques), foreign_keys, rows, has_rowid)


def _view(conn: sqlite3.Connection, name: str) -> TableInfo:
    columns = tuple(
        ColumnInfo(str(column), str(declared or ""), bool(notnull), kind=column_kind(str(declared or ""), ())[0])
        for column, declared, notnull in conn.execute('SELECT name, type, "notnull" FROM pragma_table_info(?)', (name,))
    )
    return TableInfo(name, columns, has_rowid=False, is_view=True)
