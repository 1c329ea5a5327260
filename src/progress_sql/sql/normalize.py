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

from progress_sql.sql.affinity import TypedColumns, apply_affinity
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


def transpile_sql(
    sql: str, write: str, schema: ColumnNames | None = None, types: TypedColumns | None = None
) -> str | ParseFailure:
    """A SQLite query as the ``write`` dialect writes it, or why it cannot be. Double-quoted tokens
    resolve first (SQLite's rule: a column when ``schema`` has one, else a string); every identifier
    is lower-cased, as SQLite's names are case-insensitive even when quoted, PostgreSQL's are not once
    quoted, and ``port-db`` lower-cases the names it creates there. With ``types`` (each column's
    affinity and the class the port stored it as), comparisons, aggregates and arithmetic over columns
    stored as text get SQLite's conversions (:func:`progress_sql.sql.affinity.apply_affinity`).

    >>> transpile_sql('SELECT `Name` FROM Singer WHERE country = "France" ORDER BY age', "postgres")
    "SELECT name FROM singer WHERE country = 'France' ORDER BY age NULLS FIRST"
    """
    if write == DEFAULT_DIALECT:
        return sql
    tree = parse_for_odt(sql, schema)
    if isinstance(tree, ParseFailure):
        return tree
    tree = sqlite_semantics(tree)
    if types:
        tree = apply_affinity(tree, types, write)
    for identifier in tree.find_all(exp.Identifier):
        name = identifier.this.lower()
        identifier.set("this", name)
        identifier.set("quoted", not _PLAIN_NAME.fullmatch(name) or name in _RESERVED)
    try:
        return tree.sql(dialect=write)
    except Exception as error:  # untrusted input: a generator bug must not crash a batch
        return ParseFailure(f"cannot write as {write} ({type(error).__name__}): {str(error).splitlines()[0][:300]}")


_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")
#: PostgreSQL's reserved key words (its manual, appendix C): as names they need quotes there (DuckDB's
#: list is a subset of these plus a few of the same kind).
_RESERVED = frozenset(
    [
        "all",
        "analyse",
        "analyze",
        "and",
        "any",
        "array",
        "as",
        "asc",
        "asymmetric",
        "authorization",
        "binary",
        "both",
        "case",
        "cast",
        "check",
        "collate",
        "collation",
        "column",
        "concurrently",
        "constraint",
        "create",
        "cross",
        "current_catalog",
        "current_date",
        "current_role",
        "current_schema",
        "current_time",
        "current_timestamp",
        "current_user",
        "default",
        "deferrable",
        "desc",
        "distinct",
        "do",
        "else",
        "end",
        "except",
        "false",
        "fetch",
        "for",
        "foreign",
        "freeze",
        "from",
        "full",
        "grant",
        "group",
        "having",
        "ilike",
        "in",
        "initially",
        "inner",
        "intersect",
        "into",
        "is",
        "isnull",
        "join",
        "lateral",
        "leading",
        "left",
        "like",
        "limit",
        "localtime",
        "localtimestamp",
        "natural",
        "not",
        "notnull",
        "null",
        "offset",
        "on",
        "only",
        "or",
        "order",
        "outer",
        "overlaps",
        "placing",
        "primary",
        "qualify",
        "references",
        "returning",
        "right",
        "select",
        "session_user",
        "similar",
        "some",
        "symmetric",
        "table",
        "tablesample",
        "then",
        "to",
        "trailing",
        "true",
        "union",
        "unique",
        "user",
        "using",
        "variadic",
        "verbose",
        "when",
        "where",
        "window",
        "with",
        "pivot",
        "unpivot",
    ]
)


def sqlite_semantics(tree: exp.Expr) -> exp.Expr:
    """Rewrite what SQLite means but other engines read otherwise or refuse (in place; the table:
    docs/semantics.md#transpiling-sqlite-golds): ``LIKE`` is case-insensitive in SQLite (``ILIKE``);
    a column of a grouped SELECT that is neither grouped nor aggregated (SQLite takes it from some row
    of the group; the others refuse it) becomes ``MIN(column)``, which is the same value when the
    column depends on the group's key, as in the benchmarks' golds.

    >>> sqlite_semantics(parse_sql("SELECT t.name, count(*) FROM t WHERE a LIKE 'x%' GROUP BY t.id")).sql()
    "SELECT MIN(t.name), COUNT(*) FROM t WHERE a ILIKE 'x%' GROUP BY t.id"
    """
    for like in list(tree.find_all(exp.Like)):
        like.replace(exp.ILike(this=like.this, expression=like.expression))
    for select in list(tree.find_all(exp.Select)):
        group = select.args.get("group")
        if group is None:
            continue
        keys = {key.sql().lower() for key in group.expressions}
        aliases = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}
        terms = [*select.expressions, *(o.this for o in (select.args.get("order") or exp.Order()).expressions)]
        for term in terms:
            for column in list(term.find_all(exp.Column)):
                if column.find_ancestor(exp.Select) is not select or column.find_ancestor(exp.AggFunc, exp.Window):
                    continue
                if _grouped(column, keys) or (not column.table and column.name.lower() in aliases):
                    continue
                column.replace(exp.Min(this=column.copy()))
        _break_ties_by_group(select)
    return tree


def _break_ties_by_group(select: exp.Select) -> None:
    """With a LIMIT, which of the groups tied on the ORDER BY terms survive is each engine's choice:
    the GROUP BY keys become the last ORDER BY terms (ascending, NULLs first) so that PostgreSQL and
    DuckDB at least choose alike (SQLite's choice follows its plan; it agrees in some cases only,
    docs/semantics.md#agreement-with-sqlite)."""
    order = select.args.get("order")
    if order is None or select.args.get("limit") is None or select.args.get("distinct") is not None:
        return
    present = {term.this.sql().lower() for term in order.expressions}
    for key in select.args["group"].expressions:
        if key.sql().lower() not in present and not isinstance(key, exp.Literal):
            order.append("expressions", exp.Ordered(this=key.copy(), desc=False, nulls_first=True))


def _grouped(column: exp.Column, keys: set[str]) -> bool:
    """Whether the column, or an expression around it below its SELECT, is a GROUP BY key."""
    node: exp.Expr | None = column
    while node is not None and not isinstance(node, exp.Select):
        if node.sql().lower() in keys:
            return True
        node = node.parent
    return False
