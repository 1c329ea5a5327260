"""Spider's hardness levels (easy / medium / hard / extra), the official rules on the sqlglot AST of the
outer query, parsed with SQLite's double-quote rule; the rules: docs/evaluation.md#spider-hardness."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot import exp

from progress_sql.sql.normalize import parse_for_odt
from progress_sql.sql.parse import ParseFailure
from progress_sql.types import Hardness

_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


@dataclass(frozen=True, slots=True)
class HardnessCounts:
    """The three counts the official rules combine."""

    component1: int
    component2: int
    others: int

    @property
    def level(self) -> Hardness:
        c1, c2, others = self.component1, self.component2, self.others
        if c1 <= 1 and others == 0 and c2 == 0:
            return "easy"
        if (others <= 2 and c1 <= 1 and c2 == 0) or (c1 <= 2 and others < 2 and c2 == 0):
            return "medium"
        if (
            (others > 2 and c1 <= 2 and c2 == 0)
            or (2 < c1 <= 3 and others <= 2 and c2 == 0)
            or (c1 <= 1 and others == 0 and c2 <= 1)
        ):
            return "hard"
        return "extra"


@dataclass(frozen=True, slots=True)
class _Conditions:
    """A flattened boolean clause: its condition leaves and its AND / OR connectives."""

    leaves: tuple[exp.Expr, ...] = ()
    ands: int = 0
    ors: int = 0


def _flatten(node: exp.Expr | None) -> _Conditions:
    if node is None:
        return _Conditions()
    leaves: list[exp.Expr] = []
    ands = ors = 0
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, exp.Paren) and not isinstance(current.this, (exp.Select, exp.SetOperation)):
            stack.append(current.this)
        elif isinstance(current, exp.And):
            ands += 1
            stack.extend((current.expression, current.this))
        elif isinstance(current, exp.Or):
            ors += 1
            stack.extend((current.expression, current.this))
        else:
            leaves.append(current)
    return _Conditions(tuple(leaves), ands, ors)


def _is_not(leaf: exp.Expr) -> bool:
    return isinstance(leaf, exp.Not) or bool(leaf.args.get("negate"))


def _is_like(leaf: exp.Expr) -> bool:
    inner = leaf.this if isinstance(leaf, exp.Not) else leaf
    return isinstance(inner, (exp.Like, exp.ILike))


def _subqueries(leaf: exp.Expr) -> int:
    """Sub-queries among a condition's operands (not those nested inside them)."""
    count = 0
    stack = list(leaf.iter_expressions())
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.Subquery, exp.Select, exp.SetOperation)):
            count += 1
        else:
            stack.extend(node.iter_expressions())
    return count


def _leading_aggregate(node: exp.Expr) -> bool:
    """Whether an expression starts with an aggregate (upstream's agg_id of a select or col unit)."""
    while isinstance(node, (exp.Alias, exp.Paren, *_ARITHMETIC)):
        node = node.this
    return isinstance(node, exp.AggFunc)


def _order_aggregates(node: exp.Expr) -> int:
    """Upstream counts the aggregates of both operands of an ORDER BY value unit."""
    if isinstance(node, exp.Ordered):
        node = node.this
    if isinstance(node, _ARITHMETIC):
        return int(_leading_aggregate(node.this)) + int(_leading_aggregate(node.expression))
    return int(_leading_aggregate(node))


def _leftmost(tree: exp.Expr) -> tuple[exp.Select | None, bool]:
    """The outermost query as upstream sees it, and whether a set operation follows it."""
    node, set_op = tree, False
    while True:
        if isinstance(node, exp.SetOperation):
            node, set_op = node.this, True
        elif isinstance(node, (exp.Subquery, exp.Paren)):
            node = node.this
        else:
            break
    return (node if isinstance(node, exp.Select) else None), set_op


def _joins(select: exp.Select) -> Iterator[exp.Join]:
    yield from (j for j in select.args.get("joins") or () if isinstance(j, exp.Join))


def hardness_counts(tree: exp.Expr) -> HardnessCounts | None:
    """The official counts of a parsed query (None when its outermost part is not a SELECT)."""
    select, set_op = _leftmost(tree)
    if select is None:
        return None
    source = select.args.get("from_") or select.args.get("from")
    joins = list(_joins(select))
    tables = (1 if source is not None else 0) + len(joins)
    join_conditions = [_flatten(j.args.get("on")) for j in joins]
    where_node = select.args.get("where")
    having_node = select.args.get("having")
    where = _flatten(where_node.this if where_node is not None else None)
    having = _flatten(having_node.this if having_node is not None else None)
    clauses = [*join_conditions, where, having]
    leaves = [leaf for clause in clauses for leaf in clause.leaves]
    group = select.args.get("group")
    group_items = list(group.expressions) if group is not None else []
    order = select.args.get("order")
    order_items = list(order.expressions) if order is not None else []

    component1 = sum(
        (
            where_node is not None,
            bool(group_items),
            bool(order_items),
            select.args.get("limit") is not None,
        )
    )
    component1 += max(0, tables - 1)
    component1 += sum(clause.ors for clause in clauses)
    component1 += sum(_is_like(leaf) for leaf in leaves)

    component2 = sum(_subqueries(leaf) for leaf in leaves) + int(set_op)

    aggregates = sum(_leading_aggregate(item) for item in select.expressions)
    aggregates += sum(_is_not(leaf) for leaf in where.leaves)
    aggregates += sum(_leading_aggregate(item) for item in group_items)
    aggregates += sum(_order_aggregates(item) for item in order_items)
    aggregates += having.ands + having.ors + sum(_is_not(leaf) for leaf in having.leaves)
    others = sum((aggregates > 1, len(select.expressions) > 1, len(where.leaves) > 1, len(group_items) > 1))
    return HardnessCounts(component1, component2, others)


def hardness(sql: str) -> Hardness | None:
    """Spider's hardness level of ``sql``; None when it does not parse."""
    tree = parse_for_odt(sql)
    return None if isinstance(tree, ParseFailure) else hardness_of(tree)


def hardness_of(tree: exp.Expr) -> Hardness | None:
    """The hardness level of a parsed query (None when its outermost part is not a SELECT). The
    counts do not depend on how double-quoted tokens were read (column or string), so a tree parsed
    with a schema gives the same level."""
    counts = hardness_counts(tree)
    return None if counts is None else counts.level
