"""The local structural profile p = (c, b, T, S, W, J, G, H, O) of one SELECT node (paper, Appendix D;
docs/odt.md#pipeline, step 4); a nested query is the placeholder ``<subquery>`` and a child node.

>>> from progress_sql.sql.parse import parse_sql
>>> select = parse_sql("SELECT T2.name, count(*) AS n FROM concert AS T1 JOIN stadium AS T2 "
...                    "ON T1.stadium_id = T2.stadium_id GROUP BY T1.stadium_id ORDER BY n DESC LIMIT 1")
>>> p = profile_select(select, scope_for(select))
>>> sorted(p.select), sorted(p.joins), sorted(p.order_by), p.join_count, p.has_limit
(['count(*)', 'stadium.name'], ['concert.stadium_id = stadium.stadium_id'], ['count(*) desc'], 1, True)
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterator
from typing import NamedTuple

from sqlglot import exp

from progress_sql.data.schema import Schema
from progress_sql.odt.signature import SUBQUERY, Renderer, Scope

_QUERY_TYPES = (exp.Query, exp.Subquery)


class SelectProfile(NamedTuple):
    """Clause-level features of one SELECT node (an immutable record; a named tuple rather than a frozen
    dataclass because one is built for every SELECT on the reward path, and a frozen dataclass's
    ``__init__`` sets its 23 fields one ``object.__setattr__`` at a time: 10x the cost)."""

    select: frozenset[str]
    tables: frozenset[str]
    joins: frozenset[str]
    where: frozenset[str]
    group_by: frozenset[str]
    having: frozenset[str]
    order_by: frozenset[str]
    join_count: int
    item_count: int
    has_where: bool
    has_group_by: bool
    has_having: bool
    has_order_by: bool
    has_limit: bool
    has_aggregation: bool
    distinct: bool
    aggregates: frozenset[str]
    #: SELECT item signatures in their written order (S is a set; this keeps the column order).
    select_order: tuple[str, ...] = ()
    #: Join types other than inner, one entry per joined source (``left``, ``left#2``, ``full``, ...);
    #: a comma, CROSS, NATURAL or plain JOIN is inner.
    join_types: frozenset[str] = frozenset()
    #: The LIMIT row count and the OFFSET (literals keep their value here), None when absent.
    limit: str | None = None
    offset: str | None = None
    #: ORDER BY keys whose NULLs placement is not SQLite's default (NULLs first ascending, last descending).
    order_nulls: frozenset[str] = frozenset()
    #: The SELECT list does not matter: the query is the operand of EXISTS.
    projection_free: bool = False


def local_nodes(root: exp.Expr) -> Iterator[exp.Expr]:
    """``root`` and its descendants at the same query level: a nested query is yielded (so callers
    can find it) but not entered, and that holds for ``root`` itself."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _QUERY_TYPES):
            stack.extend(node.iter_expressions())


def _aggregate_keys(items: list[exp.Expr]) -> frozenset[str]:
    """The aggregate functions in the SELECT items, nested queries not entered (as :func:`local_nodes`)."""
    keys = set()
    stack = list(items)
    while stack:
        node = stack.pop()
        if isinstance(node, exp.AggFunc):
            keys.add(node.key)
        if not isinstance(node, _QUERY_TYPES):
            stack.extend(node.iter_expressions())
    return frozenset(keys)


def conjuncts(condition: exp.Expr) -> Iterator[exp.Expr]:
    """Split a condition on AND (through parentheses)."""
    stack = [condition]
    while stack:
        node = stack.pop()
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            stack.append(node.expression)
            stack.append(node.this)
        else:
            yield node


def cte_reference(source: exp.Expr, cte_names: Container[str]) -> str | None:
    """The lower-cased CTE name a FROM / JOIN source reads, or None when it is not a CTE."""
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier) and not source.args.get("db"):
        name = source.name.lower()
        return name if name in cte_names else None
    return None


def _source_entry(source: exp.Expr, cte_names: Collection[str]) -> tuple[str, str | None, str | None]:
    alias = source.alias.lower() or None
    cte = cte_reference(source, cte_names) if cte_names else None  # most queries see no CTE
    if cte is not None:  # a CTE is a derived table written elsewhere
        return SUBQUERY, None, alias or cte
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
        name = source.name.lower()
        return name, name, alias
    if isinstance(source, _QUERY_TYPES):
        return SUBQUERY, None, alias
    return source.key, None, alias


def sources_of(select: exp.Select) -> list[exp.Expr]:
    """The FROM source and the joined sources of ``select``, in order."""
    from_clause = select.args.get("from_")
    raw: list[exp.Expr] = [from_clause.this] if from_clause is not None else []
    raw.extend(join.this for join in select.args.get("joins") or ())
    return raw


def scope_for(
    select: exp.Select,
    schema: Schema | None = None,
    parent: Scope | None = None,
    cte_names: Collection[str] = frozenset(),
) -> Scope:
    """Resolve the FROM / JOIN sources of ``select``; repeated sources are ``name``, ``name#2``, ...
    A source that reads a CTE of ``cte_names`` is ``<subquery>``, as a derived table is."""
    return scope_of_sources(sources_of(select), schema, parent, cte_names)


def scope_of_sources(
    sources: list[exp.Expr],
    schema: Schema | None = None,
    parent: Scope | None = None,
    cte_names: Collection[str] = frozenset(),
) -> Scope:
    """:func:`scope_for` of the sources :func:`sources_of` found (for a caller that needs them too)."""
    entries = [_source_entry(source, cte_names) for source in sources]
    seen: dict[str, int] = {}
    indexed = []
    for name, table, alias in entries:
        count = seen[name] = seen.get(name, 0) + 1
        # The first occurrence keeps the bare name, so that a missing self-join still shares it.
        indexed.append((name if count == 1 else f"{name}#{count}", table, alias))
    return Scope.for_sources(indexed, schema=schema, parent=parent)


def _column_owner(signature: str) -> str | None:
    owner, dot, _ = signature.rpartition(".")
    return owner if dot else None


def _join_atoms(select: exp.Select, renderer: Renderer) -> list[str]:
    atoms: list[str] = []
    sources = renderer.scope.sources
    for position, join in enumerate(select.args.get("joins") or (), start=1):
        condition = join.args.get("on")
        if condition is not None:
            atoms.extend(renderer.render(atom) for atom in conjuncts(condition))
        for column in join.args.get("using") or ():
            name = column.name.lower()
            left, right = sorted((f"{sources[position - 1].resolved}.{name}", f"{sources[position].resolved}.{name}"))
            atoms.append(f"{left} = {right}")
    return atoms


def _join_types(select: exp.Select) -> frozenset[str]:
    """Outer join sides, numbered when repeated (the join type is its own feature, not part of J)."""
    joins = select.args.get("joins")
    if not joins:
        return frozenset()
    seen: dict[str, int] = {}
    for join in joins:
        side = join.side.lower()
        if side:
            seen[side] = seen.get(side, 0) + 1
    return frozenset(side if n == 1 else f"{side}#{n}" for side, count in seen.items() for n in range(1, count + 1))


def _limit_value(node: exp.Expr | None, renderer: Renderer) -> str | None:
    """A LIMIT / OFFSET operand with its literal value kept (the count is what differs)."""
    if node is None:
        return None
    value = node.args.get("expression") if isinstance(node, (exp.Limit, exp.Offset)) else node
    if not isinstance(value, exp.Expr):
        return "?"
    if isinstance(value, exp.Literal):
        return str(value.this).lower()
    return renderer.render(value)


def limit_and_offset(query: exp.Expr, renderer: Renderer) -> tuple[str | None, str | None]:
    """The LIMIT count and OFFSET of a query (``LIMIT 2, 5`` reads as LIMIT 5 OFFSET 2)."""
    limit_node, offset_node = query.args.get("limit"), query.args.get("offset")
    if limit_node is None and offset_node is None:  # most queries
        return None, None
    limit = _limit_value(limit_node, renderer)
    offset = _limit_value(offset_node, renderer)
    if offset is None and isinstance(limit_node, exp.Limit):
        offset = _limit_value(limit_node.args.get("offset"), renderer)
    return limit, offset


def non_default_nulls(order: exp.Expr | None, renderer: Renderer) -> frozenset[str]:
    """ORDER BY keys whose NULLs placement differs from SQLite's (first ascending, last descending)."""
    if order is None:
        return frozenset()
    keys = set()
    for key in order.expressions:
        if isinstance(key, exp.Ordered) and bool(key.args.get("nulls_first")) == bool(key.args.get("desc")):
            placement = "nulls first" if key.args.get("nulls_first") else "nulls last"
            keys.add(f"{renderer.render(key)} {placement}")
    return frozenset(keys)


def _is_implicit_join(atom: exp.Expr, renderer: Renderer) -> bool:
    if not (isinstance(atom, exp.EQ) and isinstance(atom.this, exp.Column) and isinstance(atom.expression, exp.Column)):
        return False
    left = _column_owner(renderer.render(atom.this))
    right = _column_owner(renderer.render(atom.expression))
    return left is not None and right is not None and left != right


def profile_select(
    select: exp.Select,
    scope: Scope,
    *,
    projection_free: bool = False,
    aggregates: frozenset[str] | None = None,
    implicit_joins: bool = True,
    nested_everywhere: bool = True,
) -> SelectProfile:
    """Compute the profile of ``select`` with names resolved in ``scope``; ``projection_free`` for
    the operand of EXISTS, whose SELECT list does not matter. ``aggregates``: the aggregate functions
    of the SELECT list when the caller's own walk found them (the tree build does). ``implicit_joins``:
    a WHERE ``column = column`` atom across two sources is a join condition (off: it stays in WHERE).
    ``nested_everywhere`` off: a nested query in an ON condition, GROUP BY or ORDER BY is no child node
    (``odt/build.py``), so those clauses write it out as text."""
    items = select.expressions
    item_renderer = Renderer(scope)
    output_aliases = {item.alias.lower(): item.this for item in items if isinstance(item, exp.Alias)}
    renderer = Renderer(scope, output_aliases, items)
    # the clauses whose nested queries are children only where every clause's are
    keys = renderer if nested_everywhere else Renderer(scope, output_aliases, items, subquery_text=True)

    where_atoms: list[str] = []
    join_atoms = _join_atoms(select, keys)
    where = select.args.get("where")
    if where is not None:
        for atom in conjuncts(where.this):
            left, right = atom.this, atom.expression
            if type(atom) is exp.EQ and isinstance(left, exp.Column) and isinstance(right, exp.Column):
                # Render each column once: the atom's text and the implicit-join test both need them
                # (the text as the renderer writes two non-values: sorted around `=`).
                left_text, right_text = renderer.column(left), renderer.column(right)
                text = f"{left_text} = {right_text}" if left_text <= right_text else f"{right_text} = {left_text}"
                left_owner, right_owner = _column_owner(left_text), _column_owner(right_text)
                across = left_owner is not None and right_owner is not None and left_owner != right_owner
                implicit = implicit_joins and across
                (join_atoms if implicit else where_atoms).append(text)
                continue
            target = join_atoms if implicit_joins and _is_implicit_join(atom, renderer) else where_atoms
            target.append(renderer.render(atom))

    group = select.args.get("group")
    group_keys = [keys.render_key(key) for key in group.expressions] if group is not None else []
    having = select.args.get("having")
    having_atoms = [renderer.render(atom) for atom in conjuncts(having.this)] if having is not None else []
    order = select.args.get("order")
    order_keys = [keys.render(key) for key in order.expressions] if order is not None else []

    if aggregates is None:
        aggregates = _aggregate_keys(items)
    select_order = tuple([item_renderer.render(item) for item in items])
    limit, offset = limit_and_offset(select, renderer)
    return SelectProfile(
        select=frozenset(select_order),
        tables=frozenset(source.resolved for source in scope.sources),
        joins=frozenset(join_atoms),
        where=frozenset(where_atoms),
        group_by=frozenset(group_keys),
        having=frozenset(having_atoms),
        order_by=frozenset(order_keys),
        join_count=max(0, len(scope.sources) - 1),
        item_count=len(items),
        has_where=bool(where_atoms),
        has_group_by=bool(group_keys),
        has_having=bool(having_atoms),
        has_order_by=bool(order_keys),
        has_limit=limit is not None,
        has_aggregation=bool(aggregates),
        distinct=select.args.get("distinct") is not None,
        aggregates=aggregates,
        select_order=select_order,
        join_types=_join_types(select),
        limit=limit,
        offset=offset,
        order_nulls=non_default_nulls(order, renderer),
        projection_free=projection_free,
    )
