"""What the fuzzer reads of an original database (through :mod:`progress_sql.data.introspect`, once,
read-only), and how it follows its foreign keys."""

from __future__ import annotations

from pathlib import Path

from progress_sql.data.introspect import DatabaseProfile, ForeignKey, TableInfo, ValueSample, read_profile

#: Original values read per column: the first ones by rowid, NULLs included (enough for pools of a
#: few values).
FUZZ_SAMPLE = ValueSample(2_000, "first_rows")

ColumnKey = tuple[str, str]  # (table, column), lower-cased


def read_fuzz_profile(db_path: str | Path) -> DatabaseProfile:
    """The profile the fuzzer works from (read-only); DatasetError when the file cannot be read."""
    return read_profile(db_path, FUZZ_SAMPLE)


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
    # Without parent columns SQLite means the parent's primary key: same-named columns are tried
    # first, then the primary key below.
    columns = fk.parent_columns or fk.columns
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
