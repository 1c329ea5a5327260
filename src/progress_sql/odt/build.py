"""SQL syntax tree -> Oracle-guided Diagnostic Tree (paper, Appendix D, "ODT Construction"); the node
types: docs/odt.md#pipeline, step 3.

A CTE hangs where it is read: a FROM / JOIN source that names a CTE gets the CTE's body as a child
node, as a derived table would (so ``WITH t AS (...) SELECT ... FROM t`` and ``SELECT ... FROM (...) AS
t`` build the same tree); a CTE nobody reads hangs from the query that declares it.

>>> tree = build_odt("WITH t AS (SELECT a FROM x) SELECT a FROM t WHERE a IN (SELECT b FROM y)")
>>> print(tree.outline())
ROOT
  SELECT
    CTE t
      SELECT
    SUBQUERY where
      SELECT
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from sqlglot import exp

from progress_sql.data.schema import Schema
from progress_sql.odt.profile import (
    SelectProfile,
    cte_reference,
    limit_and_offset,
    non_default_nulls,
    profile_select,
    scope_of_sources,
    sources_of,
)
from progress_sql.odt.signature import Renderer, Scope
from progress_sql.sql.normalize import parse_for_odt
from progress_sql.sql.parse import DEFAULT_DIALECT, ParseFailure

NodeKind = Literal["ROOT", "SELECT", "SET_OP", "CTE", "SUBQUERY"]
QUERY_KINDS: frozenset[str] = frozenset({"SELECT", "SET_OP"})

_SET_OPS: dict[type[exp.Expr], str] = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}
_NESTED_TYPES = (exp.Query, exp.Subquery)
#: Node types that hold neither a query nor an aggregate (a column holds identifiers): the walk
#: below skips their insides, most of a statement's nodes.
_LEAVES: frozenset[type[exp.Expr]] = frozenset(
    {exp.Column, exp.Identifier, exp.Literal, exp.Star, exp.Null, exp.Boolean}
)
_CLAUSE_LABELS = {"expressions": "select", "from_": "from", "joins": "join", "group": "group_by", "order": "order_by"}

#: What the walk of :func:`_select_node` does with a node, by its type: skip it (a leaf), take it as a
#: nested query, note it as an aggregate (in the SELECT list) and enter it, or enter it.
_LEAF, _NESTED, _AGGREGATE, _OTHER = range(4)
_WALK_KINDS: dict[type[exp.Expr], int] = {}


def _walk_kind(node_type: type[exp.Expr]) -> int:
    """The walk's treatment of ``node_type`` (memoized: one dictionary lookup per node afterwards)."""
    if node_type in _LEAVES:
        kind = _LEAF
    elif issubclass(node_type, _NESTED_TYPES):
        kind = _NESTED
    elif issubclass(node_type, exp.AggFunc):
        kind = _AGGREGATE
    else:
        kind = _OTHER
    _WALK_KINDS[node_type] = kind
    return kind


class OdtNode(NamedTuple):
    """One node of the diagnostic tree; ``label`` is the CTE name, set operator or clause (an immutable
    record; a named tuple because two or more are built per diagnosis, and a frozen dataclass's
    ``__init__`` costs several times more)."""

    kind: NodeKind
    label: str = ""
    profile: SelectProfile | None = None
    children: tuple[OdtNode, ...] = ()
    #: A SET_OP's own ORDER BY keys, NULLs placements, LIMIT and OFFSET (a SELECT keeps these in its profile).
    order_by: frozenset[str] = frozenset()
    order_nulls: frozenset[str] = frozenset()
    limit: str | None = None
    offset: str | None = None

    @property
    def has_limit(self) -> bool:
        return self.limit is not None

    @property
    def step(self) -> str:
        """This node's part of a location: ``where`` (a subquery in WHERE), ``cte:t``; '' for queries."""
        if self.kind == "SUBQUERY":
            return self.label
        if self.kind == "CTE":
            return f"cte:{self.label}"
        return ""

    def outline(self, indent: int = 0) -> str:
        """A readable indented dump of the tree."""
        head = "  " * indent + self.kind + (f" {self.label}" if self.label else "")
        return "\n".join([head, *(child.outline(indent + 1) for child in self.children)])


class NotAQueryError(ValueError):
    """The statement parsed but is not a query (an INSERT, a PRAGMA, ...)."""


def _unwrap(node: exp.Expr) -> exp.Expr:
    while isinstance(node, (exp.Subquery, exp.Paren)) and isinstance(node.this, exp.Expr):
        node = node.this
    return node


@dataclass(frozen=True, slots=True)
class _Cte:
    """A WITH entry: its body and the CTEs its body can read (those declared before it)."""

    name: str
    body: exp.Expr
    visible: Mapping[str, _Cte]


@dataclass(frozen=True, slots=True)
class TreeSwitches:
    """How a tree is built: :class:`~progress_sql.odt.config.OdtConfig`'s build-time switches
    (``inline_ctes``, ``implicit_joins``, ``nested_everywhere``; all on is the project's ODT)."""

    inline_ctes: bool = True
    implicit_joins: bool = True
    nested_everywhere: bool = True


#: The clauses whose nested queries become children when ``nested_everywhere`` is off: those Appendix D
#: names (SELECT expressions, FROM, WHERE, HAVING); a JOIN's own source is part of FROM there.
_PAPER_NESTED_CLAUSES = frozenset({"expressions", "from_", "where", "having"})


@dataclass(slots=True)
class _Build:
    """State of one tree build: the schema, the switches and which CTEs were read (by identity)."""

    schema: Schema | None
    switches: TreeSwitches = field(default_factory=TreeSwitches)
    used: set[int] = field(default_factory=set)
    #: Inlined CTE bodies so far; beyond the cap a CTE reads as a table (chains of CTEs that each
    #: read the previous one twice would otherwise grow the tree exponentially).
    inlined: int = 0
    #: The cap: :data:`MAX_INLINED_CTES`, or 0 when CTEs are not inlined (``OdtConfig.inline_ctes``
    #: off: every CTE reads as a table and hangs, by name, from the query that declares it).
    max_inlined: int = 64


MAX_INLINED_CTES = 64
_ALL_ON = TreeSwitches()


def _declare(query: exp.Expr, ctes: Mapping[str, _Cte]) -> tuple[Mapping[str, _Cte], list[_Cte]]:
    """The CTEs visible inside ``query`` (outer ones plus its own WITH) and its own WITH entries."""
    with_clause = query.args.get("with_")
    if with_clause is None:  # no copy: nothing adds to a visible mapping once built
        return ctes, []
    visible = dict(ctes)
    own = []
    for cte in with_clause.expressions:
        entry = _Cte(cte.alias.lower(), cte.this, dict(visible))  # a self-reference reads as a table
        own.append(entry)
        visible[entry.name] = entry
    return visible, own


def _unused_ctes(own: list[_Cte], build: _Build) -> list[OdtNode]:
    """CTEs declared by a query and read nowhere: children of the declaring query."""
    return [
        OdtNode("CTE", entry.name, children=(_query_node(entry.body, None, build, entry.visible),))
        for entry in own
        if id(entry) not in build.used
    ]


def _set_op_arms(node: exp.Expr, op: str) -> list[exp.Expr]:
    """Flatten a chain of the same associative set operation (UNION, UNION ALL, INTERSECT)."""
    arms: list[exp.Expr] = []
    for side in (node.this, node.expression):
        inner = _unwrap(side)
        if op != "except" and isinstance(inner, exp.SetOperation) and _set_op_name(inner) == op:
            arms.extend(_set_op_arms(inner, op))
        else:
            arms.append(inner)
    return arms


def _set_op_name(node: exp.Expr) -> str:
    name = _SET_OPS[type(node)]
    return "union all" if name == "union" and not node.args.get("distinct") else name


def _values_as_select(values: exp.Values) -> exp.Select:
    """``VALUES (a, b), ...`` reads as ``SELECT a, b``: SQLite runs it as a query, so the ODT does too
    (the rows beyond the first are data, like literals)."""
    rows = values.expressions
    first = rows[0].expressions if rows and isinstance(rows[0], exp.Tuple) else rows[:1]
    return exp.Select(expressions=[item.copy() for item in first])


def _query_node(
    query: exp.Expr,
    scope: Scope | None,
    build: _Build,
    ctes: Mapping[str, _Cte],
    *,
    projection_free: bool = False,
) -> OdtNode:
    query = _unwrap(query)
    if isinstance(query, exp.Values):
        query = _values_as_select(query)
    if isinstance(query, exp.Select):
        visible, own = _declare(query, ctes)
        node = _select_node(query, scope, build, visible, projection_free)
        unused = _unused_ctes(own, build)
        return node if not unused else OdtNode(node.kind, node.label, node.profile, (*node.children, *unused))
    if isinstance(query, exp.SetOperation):
        visible, own = _declare(query, ctes)
        op = _set_op_name(query)
        arm_queries = _set_op_arms(query, op)
        arms = tuple(_query_node(arm, scope, build, visible, projection_free=projection_free) for arm in arm_queries)
        order = query.args.get("order")
        first = arm_queries[0]
        # ORDER BY after a set operation names output columns (or positions of the first arm).
        renderer = Renderer(
            Scope(schema=build.schema), items=first.expressions if isinstance(first, exp.Select) else ()
        )
        limit, offset = limit_and_offset(query, renderer)
        return OdtNode(
            "SET_OP",
            op,
            children=(*arms, *_unused_ctes(own, build)),
            order_by=frozenset(renderer.render(key) for key in order.expressions) if order is not None else frozenset(),
            order_nulls=non_default_nulls(order, renderer),
            limit=limit,
            offset=offset,
        )
    raise NotAQueryError(f"{query.key.upper()} is not a query")


def _cte_child(source: exp.Expr, build: _Build, ctes: Mapping[str, _Cte]) -> OdtNode | None:
    name = cte_reference(source, ctes)
    if name is None or build.inlined >= build.max_inlined:
        return None
    entry = ctes[name]
    build.used.add(id(entry))
    build.inlined += 1
    return OdtNode("CTE", name, children=(_query_node(entry.body, None, build, entry.visible),))


def _select_node(
    select: exp.Select, parent: Scope | None, build: _Build, ctes: Mapping[str, _Cte], projection_free: bool
) -> OdtNode:
    readable = ctes if build.inlined < build.max_inlined else {}
    sources = sources_of(select)
    scope = scope_of_sources(sources, build.schema, parent, readable.keys())
    cte_sources = (
        {id(source) for source in sources if cte_reference(source, readable) is not None} if readable else set()
    )
    # One walk of the SELECT's own level finds the nested queries (and the CTE sources) of every
    # clause and the aggregates of its SELECT list; each clause's parts in order, depth first.
    found: list[tuple[str, exp.Expr]] = []
    aggregates: set[str] = set()
    everywhere = build.switches.nested_everywhere
    for clause, value in select.args.items():
        if value is None or clause == "with_":
            continue
        label = _CLAUSE_LABELS.get(clause, clause)
        in_items = clause == "expressions"
        parts = value if isinstance(value, list) else [value]
        if not everywhere:
            if clause == "joins":  # the paper's FROM: a joined source, not its ON condition
                label, parts = "from", [join.this for join in parts if isinstance(join, exp.Join)]
            elif clause not in _PAPER_NESTED_CLAUSES:
                continue
        stack = [part for part in reversed(parts) if isinstance(part, exp.Expr)]
        while stack:
            node = stack.pop()
            kind = _WALK_KINDS.get(type(node))
            if kind is None:
                kind = _walk_kind(type(node))
            if kind == _LEAF:
                continue
            if kind == _NESTED:
                found.append((label, node))
                continue
            if in_items and kind == _AGGREGATE:
                aggregates.add(node.key)
            elif cte_sources and id(node) in cte_sources:
                found.append((label, node))
            stack.extend(node.iter_expressions())
    children: list[OdtNode] = []
    for label, node in found:
        if id(node) in cte_sources:
            child = _cte_child(node, build, readable)
            if child is not None:
                children.append(child)
        else:
            exists = isinstance(node.parent, exp.Exists)
            child_query = _query_node(node, scope, build, ctes, projection_free=exists)
            children.append(OdtNode("SUBQUERY", label, children=(child_query,)))
    profile = profile_select(
        select, scope, projection_free=projection_free, aggregates=frozenset(aggregates),
        implicit_joins=build.switches.implicit_joins, nested_everywhere=everywhere,
    )  # fmt: skip
    return OdtNode("SELECT", profile=profile, children=tuple(children))


def tree_from_ast(statement: exp.Expr, schema: Schema | None = None, *, switches: TreeSwitches = _ALL_ON) -> OdtNode:
    """Build the ODT of a parsed statement; raises :class:`NotAQueryError` for non-queries. Without
    ``switches.inline_ctes`` a CTE is not read where it is used: it hangs from its declaring query, by name."""
    build = _Build(schema, switches, max_inlined=MAX_INLINED_CTES if switches.inline_ctes else 0)
    return OdtNode("ROOT", children=(_query_node(statement, None, build, {}),))


def build_odt(
    sql: str, schema: Schema | None = None, *, dialect: str = DEFAULT_DIALECT, switches: TreeSwitches = _ALL_ON
) -> OdtNode | ParseFailure:
    """Parse and normalize ``sql`` and build its ODT, or say why it cannot be built."""
    statement = parse_for_odt(sql, schema, dialect=dialect)
    if isinstance(statement, ParseFailure):
        return statement
    return odt_of(statement, schema, switches=switches)


def odt_of(
    statement: exp.Expr, schema: Schema | None = None, *, switches: TreeSwitches = _ALL_ON
) -> OdtNode | ParseFailure:
    """The ODT of a statement already parsed (and normalized) by ``parse_for_odt``, or why there is none."""
    try:
        return tree_from_ast(statement, schema, switches=switches)
    except NotAQueryError as error:
        return ParseFailure(str(error))
    except RecursionError:
        return ParseFailure("SQL nested too deeply to analyse")
