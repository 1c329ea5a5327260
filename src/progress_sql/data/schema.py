"""Database schemas as plain values (tables and their columns, lower-cased), which the ODT uses to
qualify columns and resolve double-quoted tokens (docs/data.md#reading-a-database).

>>> schema = Schema.from_mapping({"Singer": ["Singer_ID", "Name"]})
>>> schema.tables_with_column("name")
('singer',)
>>> schema.has_column("age")
False
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from progress_sql.data.introspect import DatabaseProfile, read_profile


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

    @classmethod
    def from_profile(cls, profile: DatabaseProfile) -> Schema:
        """The table (and view, when read) and column names of a database profile."""
        return cls.from_mapping({t.name: [c.name for c in t.columns] for t in profile.tables.values()})

    def has_column(self, column: str) -> bool:
        return column.lower() in self._column_index

    def tables_with_column(self, column: str) -> tuple[str, ...]:
        return self._column_index.get(column.lower(), ())


def read_schema(db_path: str | Path) -> Schema:
    """Read table, view and column names from a SQLite file, opened read-only."""
    return Schema.from_profile(read_profile(db_path, views=True))
