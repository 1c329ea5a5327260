"""Property: a prediction that differs from a real gold in one clause only is tagged at that clause, in
the main query, and no tag names a clause that is identical. Golds: the embedded Spider questions
(progress_sql.data.embedded), diagnosed with their database's schema."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from progress_sql.data.embedded import real_questions
from progress_sql.data.schema import Schema, read_schema
from progress_sql.odt import diagnose, prepare_gold
from progress_sql.odt.profile import local_nodes
from progress_sql.sql.normalize import parse_for_odt

#: The tags each edited clause may raise.
CLAUSE_TAGS = {
    "where": {"WHERE_MISSING", "WHERE_REDUNDANT", "WHERE_ERROR"},
    "order_by": {"ORDER_BY_MISSING", "ORDER_BY_REDUNDANT", "ORDER_BY_ERROR"},
    "limit": {"LIMIT_MISMATCH", "LIMIT_VALUE_MISMATCH"},
    "distinct": {"DISTINCT_MISMATCH"},
    "group_by": {"GROUP_BY_ERROR"},
}
Edit = Callable[[exp.Select], bool]  # edits in place; False when it does not apply to this gold


def _flip_comparison(select: exp.Select) -> bool:
    where = select.args.get("where")
    if where is None:
        select.where("1 = 1", copy=False)  # a redundant filter
        return True
    for node in local_nodes(where):  # the main query's own predicates, not a subquery's
        if isinstance(node, (exp.EQ, exp.GT, exp.LT)) and isinstance(node.expression, exp.Literal):
            flipped = {exp.EQ: exp.NEQ, exp.GT: exp.LTE, exp.LT: exp.GTE}[type(node)]
            node.replace(flipped(this=node.this.copy(), expression=node.expression.copy()))
            return True
    return False


def _change_order(select: exp.Select) -> bool:
    order = select.args.get("order")
    if order is None:
        select.order_by(select.expressions[0].copy().unalias(), copy=False)
        return True
    first = order.expressions[0]
    first.set("desc", not first.args.get("desc"))
    first.set("nulls_first", not first.args.get("nulls_first"))  # keep SQLite's default placement
    return True


def _change_limit(select: exp.Select) -> bool:
    limit = select.args.get("limit")
    if limit is None:
        select.limit(7, copy=False)
        return True
    value = limit.args.get("expression")
    if not isinstance(value, exp.Literal):
        return False
    limit.set("expression", exp.Literal.number(int(value.this) + 1))
    return True


def _toggle_distinct(select: exp.Select) -> bool:
    select.set("distinct", None if select.args.get("distinct") else exp.Distinct())
    return True


def _extra_group_key(select: exp.Select) -> bool:
    group = select.args.get("group")
    columns = [c for item in select.expressions for c in local_nodes(item) if isinstance(c, exp.Column) and c.name]
    if group is None or not columns:
        return False
    keys = {key.sql().lower() for key in group.expressions}
    extra = next((c for c in columns if c.sql().lower() not in keys), None)
    if extra is None:
        return False
    group.append("expressions", extra.copy())
    return True


EDITS: dict[str, Edit] = {
    "where": _flip_comparison,
    "order_by": _change_order,
    "limit": _change_limit,
    "distinct": _toggle_distinct,
    "group_by": _extra_group_key,
}
GOLDS = [(q.gold_sql, q.db_path) for q in real_questions() if isinstance(parse_for_odt(q.gold_sql), exp.Select)]


@cache
def _schema(db_path: str) -> Schema:
    return read_schema(db_path)


@settings(max_examples=150, deadline=None)
@given(gold_index=st.integers(0, len(GOLDS) - 1), clause=st.sampled_from(sorted(EDITS)))
def test_one_clause_edit_is_tagged_at_that_clause_only(gold_index: int, clause: str) -> None:
    gold_sql, db_path = GOLDS[gold_index]
    schema = _schema(db_path)
    tree = parse_for_odt(gold_sql, schema)
    assert isinstance(tree, exp.Select)
    edited = tree.copy()
    if not EDITS[clause](edited):
        return
    pred_sql = edited.sql(dialect="sqlite")
    diagnosis = diagnose(pred_sql, prepare_gold(gold_sql, schema))
    context = f"{clause}: {pred_sql!r} against {gold_sql!r}: {[str(f) for f in diagnosis.findings]}"
    assert diagnosis.status == "ok", context
    assert diagnosis.tags, context
    assert set(diagnosis.tags) <= CLAUSE_TAGS[clause], context
    assert all(finding.location == () for finding in diagnosis.findings), context


def test_the_golds_are_many() -> None:
    assert len(GOLDS) >= 50
