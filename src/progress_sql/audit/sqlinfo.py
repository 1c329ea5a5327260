"""Facts about a gold query's syntax tree that several checks need: a column's table, the ORDER BY
keys of a query level and a query that returns them (a column's SQLite affinity:
:func:`progress_sql.sql.affinity.sqlite_affinity`)."""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from progress_sql.data.introspect import ColumnInfo, DatabaseProfile

#: Prefix of the ORDER BY key columns appended to a query (see :func:`keyed_query`).
KEY_PREFIX = "audit_key_"


def level_tables(select: exp.Select) -> dict[str, str]:
    """Alias (or name) -> table name of the tables in this query level's FROM and JOINs, lower-cased."""
    sources: list[exp.Expr] = []
    from_ = select.args.get("from_") or select.args.get("from")
    if isinstance(from_, exp.From):
        sources.append(from_.this)
    sources.extend(join.this for join in select.args.get("joins") or ())
    return {s.alias_or_name.lower(): s.name.lower() for s in sources if isinstance(s, exp.Table)}


def owning_select(node: exp.Expr) -> exp.Select | None:
    """The query level a node belongs to."""
    found = node.find_ancestor(exp.Select)
    return found if isinstance(found, exp.Select) else None


def resolve_column(column: exp.Column, profile: DatabaseProfile | None) -> tuple[str, ColumnInfo] | None:
    """The (lower-cased) table and the column a column reference names, when the schema settles it."""
    select = owning_select(column)
    if select is None or profile is None:
        return None
    aliases = level_tables(select)
    if column.table:
        table = aliases.get(column.table.lower())
        info = _column(profile, table, column.name) if table is not None else None
        return (table, info) if table is not None and info is not None else None
    owners = [(t, info) for t in dict.fromkeys(aliases.values()) if (info := _column(profile, t, column.name))]
    return owners[0] if len(owners) == 1 else None


def _column(profile: DatabaseProfile, table: str, column: str) -> ColumnInfo | None:
    relation = profile.table(table)
    return relation.column(column) if relation is not None else None


def is_aggregate_level(select: exp.Select) -> bool:
    """GROUP BY, or an aggregate function (not a window function) in the select list."""
    if select.args.get("group"):
        return True
    return any(
        not isinstance(function.parent, exp.Window) and owning_select(function) is select
        for expression in select.expressions
        for function in expression.find_all(exp.AggFunc)
    )


def order_keys(select: exp.Select) -> list[exp.Expr]:
    """The ORDER BY expressions of a level, with ordinals and select-list aliases replaced by the
    expressions they stand for (so that they can be selected again)."""
    order = select.args.get("order")
    if not isinstance(order, exp.Order):
        return []
    aliases = {e.alias.lower(): e.this for e in select.expressions if isinstance(e, exp.Alias) and e.alias}
    keys: list[exp.Expr] = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and 1 <= int(key.name) <= len(select.expressions):
            target = select.expressions[int(key.name) - 1]
            key = target.this if isinstance(target, exp.Alias) else target
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            key = aliases[key.name.lower()]
        keys.append(key)
    return keys


def int_literal(node: exp.Expr | None) -> int | None:
    """The value of a LIMIT/OFFSET clause when it is an integer literal."""
    value = node.expression if isinstance(node, (exp.Limit, exp.Offset)) else None
    return int(value.name) if isinstance(value, exp.Literal) and value.is_int else None


def keyed_query(select: exp.Select, limit: int | None, keep_offset: bool) -> tuple[str, int] | None:
    """SQL for ``select`` with its ORDER BY keys appended to the select list and LIMIT ``limit``
    (none when None), and the number of keys; None when the level has no ORDER BY.

    >>> from progress_sql.sql.parse import parse_sql
    >>> keyed_query(parse_sql("SELECT name FROM t ORDER BY age DESC LIMIT 1"), 2, False)
    ('SELECT name, age AS audit_key_0 FROM t ORDER BY age DESC LIMIT 2', 1)
    """
    keys = order_keys(select)
    if not keys:
        return None
    copy = select.copy()
    copy.set(
        "expressions", [*copy.expressions, *(exp.alias_(k.copy(), f"{KEY_PREFIX}{i}") for i, k in enumerate(keys))]
    )
    copy.set("limit", exp.Limit(expression=exp.Literal.number(limit)) if limit is not None else None)
    if not keep_offset:
        copy.set("offset", None)
    return copy.sql(dialect="sqlite"), len(keys)


def selects(tree: exp.Expr) -> Iterator[exp.Select]:
    """Every query level of the tree, outermost first."""
    yield from tree.find_all(exp.Select, bfs=True)


def quote_string(text: str) -> str:
    """``text`` as a single-quoted SQLite string literal.

    >>> quote_string("O'Neil")
    "'O''Neil'"
    """
    return "'" + text.replace("'", "''") + "'"
