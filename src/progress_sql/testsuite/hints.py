"""What the gold queries tell the fuzzer: the constants they compare columns with (and so the
values a suite database needs, with their near misses) and the columns they join on without a
declared foreign key. Double-quoted literals are read through the ODT's normalization
(:func:`progress_sql.sql.normalize.parse_for_odt`), as SQLite reads them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from sqlglot import exp

from progress_sql.data.introspect import ColumnInfo, DatabaseProfile, ForeignKey
from progress_sql.data.schema import Schema
from progress_sql.sql.normalize import parse_for_odt
from progress_sql.testsuite.profile import ColumnKey, parent_of, root_column, table_order
from progress_sql.types import SQLValue

Constants = Mapping[ColumnKey, tuple[SQLValue, ...]]

_INTEGER = re.compile(r"-?\d+")
_COMPARISONS: tuple[type[exp.Expr], ...] = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)


def literal_value(node: exp.Expr) -> SQLValue | None:
    """The Python value of a literal (a signed number or a string), None for anything else.

    >>> literal_value(exp.Literal.number(-3)), literal_value(exp.Literal.string("x"))
    (-3, 'x')
    """
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        inner = literal_value(node.this)
        return -inner if isinstance(inner, (int, float)) else None
    if not isinstance(node, exp.Literal):
        return None
    text = str(node.this)
    if node.is_string:
        return text
    try:
        return int(text) if _INTEGER.fullmatch(text) else float(text)
    except ValueError:
        return None


def _column_tables(column: exp.Column, aliases: Mapping[str, str], profile: DatabaseProfile) -> list[str]:
    name = column.name
    if column.table:
        table = aliases.get(column.table.lower(), column.table.lower())
        info = profile.table(table)
        return [info.name.lower()] if info is not None and info.column(name) else []
    in_query = [t for t in dict.fromkeys(aliases.values()) if (info := profile.table(t)) and info.column(name)]
    if in_query:
        return in_query
    return [key for key, info in profile.tables.items() if info.column(name)]


def _parsed(golds: Iterable[str], profile: DatabaseProfile) -> Iterator[tuple[exp.Expr, dict[str, str]]]:
    """Each gold that parses, with its table aliases (alias or name -> table name, lower case)."""
    schema = Schema.from_profile(profile)
    for sql in golds:
        tree = parse_for_odt(sql, schema)
        if isinstance(tree, exp.Expr):
            yield tree, {t.alias_or_name.lower(): t.name.lower() for t in tree.find_all(exp.Table)}


def _comparisons(tree: exp.Expr) -> Iterable[tuple[exp.Column, Sequence[SQLValue], bool]]:
    """(column, constants, is a LIKE pattern) for every column compared with literals."""
    for node in tree.walk():
        if isinstance(node, _COMPARISONS):
            left, right = node.this, node.expression
            if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
                left, right = right, left
            value = literal_value(right)
            if isinstance(left, exp.Column) and value is not None:
                yield left, [value], isinstance(node, (exp.Like, exp.ILike))
        elif isinstance(node, exp.In) and isinstance(node.this, exp.Column):
            values = [v for v in (literal_value(e) for e in node.expressions) if v is not None]
            if values:
                yield node.this, values, False
        elif isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
            ends = [literal_value(node.args["low"]), literal_value(node.args["high"])]
            yield node.this, [v for v in ends if v is not None], False


def gold_constants(golds: Iterable[str], profile: DatabaseProfile) -> dict[ColumnKey, tuple[SQLValue, ...]]:
    """The constants the gold queries compare columns with, per (table, column) where the fuzzer
    generates that column's values (the root of its foreign-key chain), in first-seen order."""
    found: dict[ColumnKey, dict[SQLValue, None]] = {}
    for tree, aliases in _parsed(golds, profile):
        for column, values, like in _comparisons(tree):
            for table in _column_tables(column, aliases, profile):
                info = profile.table(table)
                target = info.column(column.name) if info else None
                if target is None:
                    continue
                key = root_column(profile, table, target.name.lower())
                for value in values:
                    if like and isinstance(value, str):
                        value = value.replace("%", "").replace("_", " ").strip() or value
                    value = _as_column_value(value, target)
                    if value is not None:
                        found.setdefault(key, {})[value] = None
    return {key: tuple(values) for key, values in found.items()}


def join_links(golds: Iterable[str], profile: DatabaseProfile) -> dict[str, tuple[ForeignKey, ...]]:
    """Undeclared foreign keys that the gold queries join on (``T1.uid = T2.airline``), per child
    table: the fuzzer draws the child column from the parent's rows so that such joins find rows.
    The parent is the side that is a single-column key (or, when both or neither are, the table
    filled first). Links already declared are left out; these are never checked as constraints."""
    order = {t.name.lower(): i for i, t in enumerate(table_order(profile))}
    found: dict[str, dict[ForeignKey, None]] = {}
    for tree, aliases in _parsed(golds, profile):
        for node in tree.find_all(exp.EQ):
            left, right = node.this, node.expression
            if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                continue
            sides = []
            for column in (left, right):
                tables = _column_tables(column, aliases, profile)
                info = profile.table(tables[0]) if len(tables) == 1 else None
                target = info.column(column.name) if info else None
                if info is None or target is None:
                    break
                sides.append((info, target.name))
            if len(sides) != 2 or sides[0][0].name == sides[1][0].name:
                continue
            keys = [(t.primary_key == (c,) or (c,) in t.uniques) for t, c in sides]
            if keys[0] != keys[1]:
                parent, child = (sides[0], sides[1]) if keys[0] else (sides[1], sides[0])
            else:
                parent, child = sorted(sides, key=lambda side: order[side[0].name.lower()])
            if parent_of(profile, child[0], child[1]) is not None:
                continue  # declared already
            link = ForeignKey((child[1],), parent[0].name, (parent[1],))
            found.setdefault(child[0].name.lower(), {})[link] = None
    return {table: tuple(links) for table, links in found.items()}


def _as_column_value(value: SQLValue, column: ColumnInfo) -> SQLValue | None:
    """The constant as the column stores it (``"80000"`` against an INTEGER column is the number
    80000, by SQLite's affinity rules), or None when it cannot be such a value."""
    if column.kind in ("integer", "real"):
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                return None
            return int(number) if number.is_integer() and column.kind == "integer" else number
        return value if isinstance(value, (int, float)) else None
    if column.kind in ("text", "date") and isinstance(value, (int, float)):
        return value if column.kind == "text" else None
    return value


# --- building one database -------------------------------------------------------------------------
