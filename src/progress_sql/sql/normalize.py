"""SQL normalization for the SQLite dialect, shared by the ODT, test suites, hardness rules and audit:
:func:`resolve_double_quoted` (SQLite's double-quote rule, docs/odt.md#pipeline, step 2) and
:func:`parse_for_odt` (parse, then resolve).

>>> tree = parse_for_odt('SELECT name FROM country WHERE government != "Republic"')
>>> tree.sql()
"SELECT name FROM country WHERE government <> 'Republic'"
"""

from __future__ import annotations

import re
from typing import Protocol

from sqlglot import exp

from progress_sql.sql.parse import DEFAULT_DIALECT, ParseFailure, parse_sql


class ColumnNames(Protocol):
    """What the double-quote rule needs of a schema (``progress_sql.data.schema.Schema`` is one)."""

    def has_column(self, column: str) -> bool: ...


# Single-quoted strings are skipped so that a double quote inside them is not taken for a token.
_QUOTED_TOKEN = re.compile(r"'(?:[^']|'')*'|\"((?:[^\"]|\"\")*)\"")

#: Parents in which a double-quoted token stands for a value when there is no schema.
_VALUE_COMPARISONS: tuple[type[exp.Expr], ...] = (
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.Like,
    exp.ILike,
    exp.Glob,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
)


def double_quoted_tokens(sql: str) -> frozenset[str]:
    """The texts written in double quotes in ``sql`` (outside single-quoted strings).

    >>> sorted(double_quoted_tokens('SELECT "a" FROM t WHERE b = \\'say "hi"\\' AND c = "x""y"'))
    ['a', 'x"y']
    """
    return frozenset(
        match.group(1).replace('""', '"') for match in _QUOTED_TOKEN.finditer(sql) if match.group(1) is not None
    )


def _in_value_position(column: exp.Column) -> bool:
    parent = column.parent
    if isinstance(parent, _VALUE_COMPARISONS):
        # Only the right operand is a value: in `"County Name" = 'x'` the quoted token is a column.
        return column is parent.expression
    if isinstance(parent, exp.In):
        return column is not parent.this
    if isinstance(parent, exp.Between):
        return column is not parent.this
    return False


def resolve_double_quoted(tree: exp.Expr, sql: str, schema: ColumnNames | None = None) -> exp.Expr:
    """Turn double-quoted tokens that SQLite would read as strings into string literals (in place)."""
    if '"' not in sql:  # the common case, without a regular expression pass
        return tree
    candidates = double_quoted_tokens(sql)
    if not candidates:
        return tree
    for column in list(tree.find_all(exp.Column)):
        identifier = column.this
        if column.table or not isinstance(identifier, exp.Identifier) or not identifier.quoted:
            continue
        text = identifier.this
        if text not in candidates:
            continue
        is_literal = not schema.has_column(text) if schema is not None else _in_value_position(column)
        if is_literal:
            column.replace(exp.Literal.string(text))
    return tree


def parse_for_odt(
    sql: str, schema: ColumnNames | None = None, *, dialect: str = DEFAULT_DIALECT
) -> exp.Expr | ParseFailure:
    """Parse ``sql`` with the shared entry point and apply SQLite's double-quote rule."""
    tree = parse_sql(sql, dialect=dialect)
    if isinstance(tree, ParseFailure):
        return tree
    return resolve_double_quoted(tree, sql, schema)
