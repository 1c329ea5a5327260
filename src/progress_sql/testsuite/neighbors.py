"""Neighbour queries: single edits of a gold query on its syntax tree that are *likely* to mean something
else, in SQLite's dialect; the edits: docs/testsuite.md#how-a-suite-is-built, step 1.

>>> from progress_sql.data.schema import Schema
>>> schema = Schema.from_mapping({"stadium": ["location", "capacity"]})
>>> found = neighbour_candidates("SELECT location FROM stadium WHERE capacity < 100", schema)
>>> "SELECT location FROM stadium" in found, "SELECT location FROM stadium WHERE capacity <= 100" in found
(True, True)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import partial

from sqlglot import exp

from progress_sql.data.schema import Schema
from progress_sql.sql.normalize import parse_for_odt
from progress_sql.testsuite.hints import literal_value

#: At most this many neighbours per gold (a deterministic sample beyond it).
MAX_NEIGHBOURS = 150
#: Replacement columns tried per column reference.
MAX_COLUMN_SWAPS = 6

_COMPARISONS: tuple[type[exp.Binary], ...] = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_AGGREGATES: tuple[type[exp.Func], ...] = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)
_DROPPABLE: tuple[type[exp.Expr], ...] = (exp.Where, exp.Group, exp.Having, exp.Order, exp.Limit, exp.Offset)
_SET_OPERATIONS: tuple[type[exp.SetOperation], ...] = (exp.Union, exp.Intersect, exp.Except)

Edit = Callable[[exp.Expr], object]  # applied in place to the same node of a fresh copy


def _swap_class(node: exp.Expr, to: type[exp.Expr]) -> exp.Expr:
    return to(**dict(node.args.items()))


# Edits, applied through functools.partial to the matching node of a fresh copy.
def _drop(node: exp.Expr) -> None:
    node.pop()


def _single_row(select: exp.Select) -> bool:
    """An aggregate without GROUP BY: always one row, so LIMIT 1 changes nothing."""
    grouped = select.args.get("group") is not None
    return not grouped and any(e.find(exp.AggFunc) is not None for e in select.expressions)


def _limit_one(node: exp.Expr) -> None:
    # A superlative written as ORDER BY ... LIMIT 1 where the gold keeps every tie: suites need a
    # database on which the gold returns several rows.
    node.set("limit", exp.Limit(expression=exp.Literal.number(1)))


def _drop_projection(node: exp.Expr, index: int) -> None:
    node.expressions[index].pop()


def _set(node: exp.Expr, key: str, value: object) -> None:
    node.set(key, value)


def _toggle(node: exp.Expr, key: str) -> None:
    node.set(key, not node.args.get(key))


def _keep_side(node: exp.Expr, side: str) -> None:
    node.replace(node.args[side])


def _become(node: exp.Expr, to: type[exp.Expr]) -> None:
    swapped = _swap_class(node, to)
    if isinstance(swapped, exp.Or) and isinstance(node.parent, (exp.And, exp.Not)):
        swapped = exp.Paren(this=swapped)  # the tree has no parentheses: keep the grouping when printed
    node.replace(swapped)


def _negate(node: exp.Expr) -> None:
    node.replace(exp.Not(this=node.copy()))


def _unwrap(node: exp.Expr) -> None:
    node.replace(node.this)


def _aggregate(node: exp.Expr, to: type[exp.Expr]) -> None:
    node.replace(to(this=node.this))


def _rename(node: exp.Expr, column: str) -> None:
    node.set("this", exp.to_identifier(column))


def _literal_to(node: exp.Expr, value: int | float | str) -> None:
    node.replace(_literal(value))


def _edits(
    node: exp.Expr, root: exp.Expr, schema: Schema, aliases: dict[str, str], rng: random.Random
) -> Iterator[Edit]:
    """The edits of one node, each a function applied to the same node in a fresh copy."""
    if isinstance(node, _DROPPABLE):
        yield _drop
    if isinstance(node, exp.Select):
        if node is root and node.args.get("limit") is None and not _single_row(node):
            yield _limit_one
        if node.args.get("distinct"):
            yield partial(_set, key="distinct", value=None)
        if len(node.expressions) > 1:
            for i in range(len(node.expressions)):
                yield partial(_drop_projection, index=i)
    if isinstance(node, (exp.And, exp.Or)):
        yield partial(_keep_side, side="this")
        yield partial(_keep_side, side="expression")
        yield partial(_become, to=exp.Or if isinstance(node, exp.And) else exp.And)
    if type(node) in _COMPARISONS:
        yield from (partial(_become, to=other) for other in _COMPARISONS if other is not type(node))
    if isinstance(node, (exp.Like, exp.In)) and not isinstance(node.parent, exp.Not):
        yield _negate
    if isinstance(node, exp.Not) and isinstance(node.this, (exp.Like, exp.In)):
        yield _unwrap
    if type(node) in _AGGREGATES and not isinstance(node.this, (exp.Star, exp.Distinct)):
        yield from (partial(_aggregate, to=other) for other in _AGGREGATES if other is not type(node))
    if isinstance(node, exp.Ordered):
        yield partial(_toggle, key="desc")
    if type(node) in _SET_OPERATIONS:
        yield from (partial(_become, to=other) for other in _SET_OPERATIONS if other is not type(node))
        if isinstance(node, exp.Union):
            yield partial(_toggle, key="distinct")
    if isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier):
        yield from _column_edits(node, schema, aliases, rng)
    value = literal_value(node) if isinstance(node, (exp.Literal, exp.Neg)) else None
    if value is not None and not isinstance(node.parent, (exp.Neg, exp.Limit)):
        yield from (partial(_literal_to, value=other) for other in _literal_variants(value, rng))


def _column_edits(node: exp.Column, schema: Schema, aliases: dict[str, str], rng: random.Random) -> Iterator[Edit]:
    if node.find_ancestor(exp.Count) is not None:
        return
    if node.table:
        tables = [aliases.get(node.table.lower(), node.table.lower())]
    else:
        select = node.find_ancestor(exp.Select)
        scope = select if select is not None else node.root()
        tables = list(dict.fromkeys(t.name.lower() for t in scope.find_all(exp.Table)))
    name = node.name.lower()
    columns = {c for t in tables for c in schema.tables.get(t, ())}
    if name not in columns:
        return  # an alias of a selected expression, not a table column
    options = sorted(columns - {name})
    if len(options) > MAX_COLUMN_SWAPS:
        options = sorted(rng.sample(options, MAX_COLUMN_SWAPS))
    yield from (partial(_rename, column=option) for option in options)


def _literal(value: int | float | str) -> exp.Expr:
    if isinstance(value, str):
        return exp.Literal.string(value)
    if value < 0:
        return exp.Neg(this=exp.Literal.number(-value))
    return exp.Literal.number(value)


def _literal_variants(value: int | float | str | bytes, rng: random.Random) -> list[int | float | str]:
    """Near and far replacements of a literal (A.3.1: ±1, random numbers, substrings, % wildcards)."""
    found: list[int | float | str] = []
    if isinstance(value, bool):
        return found
    if isinstance(value, int):
        found = [value + 1, value - 1, rng.randint(-abs(value) - 1, abs(value) + 1)]
    elif isinstance(value, float):
        found = [round(value + 0.1, 6), round(value - 0.1, 6), round(rng.uniform(-abs(value), abs(value)), 2)]
    elif isinstance(value, str):
        found = ["", value[:-1], value[1:], value.lower(), value.upper()]
        found.append(value.strip("%") if "%" in value else f"%{value}%")
    return [v for v in dict.fromkeys(found) if v != value]


def neighbour_candidates(gold: str, schema: Schema, *, limit: int = MAX_NEIGHBOURS) -> list[str]:
    """Single-edit neighbours of ``gold`` (SQLite text), deduplicated, the gold itself excluded;
    empty when the gold cannot be parsed. Deterministic for a given gold."""
    tree = parse_for_odt(gold, schema)
    if not isinstance(tree, exp.Expr):
        return []
    rng = random.Random(gold)
    aliases = {t.alias_or_name.lower(): t.name.lower() for t in tree.find_all(exp.Table)}
    original = tree.sql(dialect="sqlite")
    # Under a holder node, so that even the root can be replaced in place.
    holder = exp.Paren(this=tree)
    found: dict[str, None] = {}
    for index, node in enumerate(list(tree.walk())):
        for edit in list(_edits(node, tree, schema, aliases, rng)):
            copy = holder.copy()
            target = list(copy.this.walk())[index]
            try:
                edit(target)
                text = copy.this.sql(dialect="sqlite")
            except Exception:  # an edit sqlglot cannot render is simply not a neighbour
                continue
            if text and text != original:
                found[text] = None
    texts = list(found)
    if len(texts) > limit:
        keep = set(rng.sample(range(len(texts)), limit))
        texts = [t for i, t in enumerate(texts) if i in keep]
    return texts
