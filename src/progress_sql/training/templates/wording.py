"""How the templates write schema names and values: English words for questions, Spider's SQL style
(lower-case identifiers, quoted only when they must be) for the SQL."""

from __future__ import annotations

import re

from progress_sql.data.introspect import ColumnInfo, TableInfo, quote_identifier
from progress_sql.types import SQLValue

_PLAIN_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*\Z")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_INTEGER_TEXT = re.compile(r"-?\d+\Z")


def words(name: str) -> str:
    """An identifier as lower-case English words: ``Song_release_year`` -> ``song release year``.

    >>> words("Song_release_year"), words("PetType"), words("StuID")
    ('song release year', 'pet type', 'stu id')
    """
    return " ".join(_CAMEL.sub(" ", name).replace("_", " ").lower().split())


def identifier(name: str) -> str:
    """``name`` as Spider writes it: lower case, double-quoted only when it must be."""
    lowered = name.lower()
    return lowered if _PLAIN_IDENTIFIER.match(lowered) else quote_identifier(lowered)


def literal(value: SQLValue) -> str:
    """A SQL literal: numbers (and integer text, such as years) bare, text single-quoted."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) and not value.is_integer() else str(int(value))
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if _INTEGER_TEXT.match(text):
        return text
    return "'" + text.replace("'", "''") + "'"


def spoken(value: SQLValue) -> str:
    """A value as a question states it: numbers bare, text in single quotes, as in the SQL, so that
    the value's tokens in the question and in the answer are the same (a small from-scratch model
    copies a quoted value; it cannot learn to map ``ĠPark`` to ``Park`` for values it never saw).

    >>> spoken("Stark's Park"), spoken(2014)
    ("'Stark's Park'", '2014')
    """
    text = literal(value)
    return "'" + text[1:-1].replace("''", "'") + "'" if text.startswith("'") else text


def is_number(column: ColumnInfo) -> bool:
    """Whether the column's sampled values are all numbers (or integer text, such as years)."""
    values = column.values
    numeric = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    integer_text = [v for v in values if isinstance(v, str) and _INTEGER_TEXT.match(v)]
    return bool(values) and len(numeric) + len(integer_text) == len(values)


def is_link(table: TableInfo) -> bool:
    """A pure link table (every column is a key), such as ``singer_in_concert``."""
    return all(column.key for column in table.columns)


def plural(table: TableInfo) -> str:
    base = words(table.name)
    if is_link(table):
        return f"{base} records"
    return base if base.endswith("s") and not base.endswith("ss") else base + "s"


def singular(table: TableInfo) -> str:
    base = words(table.name)
    if is_link(table):
        return f"{base} record"
    return base[:-1] if base.endswith("s") and not base.endswith("ss") else base
