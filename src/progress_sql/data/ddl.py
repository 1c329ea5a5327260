"""``db_details`` for prompts: the schema of a SQLite file in a prompt profile (``full``, ``ddl``,
``compact`` or ``none``), deterministic for a given file; docs/data.md#the-schema-in-the-prompt.
``ddl`` is ``full`` without the sample values: the DDL alone, as the paper's Appendix F describes
``{db_details}``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from progress_sql.data.introspect import TableInfo, ValueSample, read_profile
from progress_sql.types import SQLValue

SchemaProfile = Literal["full", "ddl", "compact", "none"]
SCHEMA_PROFILES: tuple[SchemaProfile, ...] = ("full", "ddl", "compact", "none")


#: Longest sample text shown (longer strings are shortened with "...").
MAX_SAMPLE_CHARS = 40


def sample_text(value: SQLValue, max_chars: int = MAX_SAMPLE_CHARS) -> str:
    """A sample value as the DDL's ``-- examples:`` comment shows it.

    >>> sample_text("O'Neil"), sample_text(b"ab"), sample_text(2.5)
    ("'O''Neil'", '<blob 2 bytes>', '2.5')
    """
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    if isinstance(value, str):
        text = value if len(value) <= max_chars else value[: max_chars - 3] + "..."
        return "'" + text.replace("'", "''").replace("\n", " ") + "'"
    return repr(value)


def render_tables(tables: Iterable[TableInfo], profile: SchemaProfile = "full") -> str:
    """Render tables in a prompt profile (samples: the columns' ``values``).

    >>> from progress_sql.data.introspect import ColumnInfo
    >>> table = TableInfo("singer", (ColumnInfo("singer_id", "INTEGER", primary_key=True, values=(1, 2)),
    ...                              ColumnInfo("name", "TEXT", values=("Joe",))))
    >>> print(render_tables((table,)))
    CREATE TABLE singer (
      singer_id INTEGER, -- examples: 1, 2
      name TEXT, -- examples: 'Joe'
      PRIMARY KEY (singer_id)
    );
    >>> print(render_tables((table,), "ddl"))
    CREATE TABLE singer (
      singer_id INTEGER,
      name TEXT,
      PRIMARY KEY (singer_id)
    );
    >>> render_tables((table,), "compact")
    'singer(singer_id, name)'
    """
    if profile == "none":
        return ""
    if profile == "compact":
        return "\n".join(f"{t.name}({', '.join(c.name for c in t.columns)})" for t in tables)
    return "\n\n".join(_create_table(table, samples=profile == "full") for table in tables)


def _create_table(table: TableInfo, *, samples: bool = True) -> str:
    lines = []
    for column in table.columns:
        line = f"  {column.name} {column.declared}".rstrip() + ","
        if samples and column.values:
            line += f" -- examples: {', '.join(sample_text(value) for value in column.values)}"
        lines.append(line)
    keys = [c.name for c in table.columns if c.primary_key]
    constraints = [f"  PRIMARY KEY ({', '.join(keys)})"] if keys else []
    constraints += [
        f"  FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.parent}({', '.join(fk.parent_columns)})"
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
    values = ValueSample(samples, "distinct") if profile == "full" and samples > 0 else None
    return render_tables(read_profile(db_path, values).tables.values(), profile)
