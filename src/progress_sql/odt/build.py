"""SQL syntax tree -> Oracle-guided Diagnostic Tree (paper, Appendix D, "ODT Construction"); the node
types: docs/odt.md#pipeline, step 3.

>>> tree = build_odt("WITH t AS (SELECT a FROM x) SELECT a FROM t WHERE a IN (SELECT b FROM y)")
>>> print(tree.outline())
ROOT
  CTE t
    SELECT
  SELECT
    SUBQUERY where
      SELECT
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from sqlglot import exp

from progress_sql.data.schema import Schema
from progress_sql.odt.profile import SelectProfile, local_nodes, profile_select, scope_for
from progress_sql.odt.signature import Renderer, Scope
from progress_sql.sql.normalize import parse_for_odt
from progress_sql.sql.parse import DEFAULT_DIALECT, ParseFailure

NodeKind = Literal["ROOT", "SELECT", "SET_OP", "CTE", "SUBQUERY"]
QUERY_KINDS: frozenset[str] = frozenset({"SELECT", "SET_OP"})

_SET_OPS: dict[type[exp.Expr], str] = {exp.Union: "union", exp.Intersect: "intersect", exp.Except: "except"}
_CLAUSE_LABELS = {"expressions": "select", "from_": "from", "joins": "join", "group": "group_by", "order": "order_by"}


@dataclass(frozen=True, slots=True)
class OdtNode:
    """One node of the diagnostic tree; ``label`` is the CTE name, set operator or clause."""

    kind: NodeKind
    label: str = ""
    profile: SelectProfile | None = None
    children: tuple[OdtNode, ...] = ()
    #: A SET_OP's own ORDER BY keys and LIMIT flag (a SELECT keeps these in its profile).
    order_by: frozenset[str] = frozenset()
    has_limit: bool = False

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


def _cte_nodes(query: exp.Expr, scope: Scope | None, schema: Schema | None) -> list[OdtNode]:
    with_clause = query.args.get("with_")
    if with_clause is None:
        return []
    return [
        OdtNode("CTE", cte.alias.lower(), children=(_query_node(cte.this, scope, schema),))
        for cte in with_clause.expressions
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


def _query_node(query: exp.Expr, scope: Scope | None, schema: Schema | None) -> OdtNode:
    query = _unwrap(query)
    if isinstance(query, exp.Select):
        return _select_node(query, scope, schema)
    if isinstance(query, exp.SetOperation):
        op = _set_op_name(query)
        arm_queries = _set_op_arms(query, op)
        arms = tuple(_query_node(arm, scope, schema) for arm in arm_queries)
        order = query.args.get("order")
        first = arm_queries[0]
        # ORDER BY after a set operation names output columns (or positions of the first arm).
        renderer = Renderer(Scope(schema=schema), items=first.expressions if isinstance(first, exp.Select) else ())
        return OdtNode(
            "SET_OP",
            op,
            children=(*_cte_nodes(query, scope, schema), *arms),
            order_by=frozenset(renderer.render(key) for key in order.expressions) if order is not None else frozenset(),
            has_limit=query.args.get("limit") is not None,
        )
    raise NotAQueryError(f"{query.key.upper()} is not a query")


def _select_node(select: exp.Select, parent: Scope | None, schema: Schema | None) -> OdtNode:
    scope = scope_for(select, schema, parent)
    children = _cte_nodes(select, parent, schema)
    for clause, value in select.args.items():
        if clause == "with_" or value is None:
            continue
        label = _CLAUSE_LABELS.get(clause, clause)
        for part in value if isinstance(value, list) else [value]:
            if not isinstance(part, exp.Expr):
                continue
            for node in local_nodes(part):
                if isinstance(node, (exp.Query, exp.Subquery)):
                    children.append(OdtNode("SUBQUERY", label, children=(_query_node(node, scope, schema),)))
    return OdtNode("SELECT", profile=profile_select(select, scope), children=tuple(children))


def tree_from_ast(statement: exp.Expr, schema: Schema | None = None) -> OdtNode:
    """Build the ODT of a parsed statement; raises :class:`NotAQueryError` for non-queries.

    The statement's own WITH entries hang from ROOT, beside the main query.
    """
    main = _query_node(statement, None, schema)
    ctes = tuple(child for child in main.children if child.kind == "CTE")
    rest = tuple(child for child in main.children if child.kind != "CTE")
    return OdtNode("ROOT", children=(*ctes, replace(main, children=rest)))


def build_odt(sql: str, schema: Schema | None = None, *, dialect: str = DEFAULT_DIALECT) -> OdtNode | ParseFailure:
    """Parse and normalize ``sql`` and build its ODT, or say why it cannot be built."""
    statement = parse_for_odt(sql, schema, dialect=dialect)
    if isinstance(statement, ParseFailure):
        return statement
    return odt_of(statement, schema)


def odt_of(statement: exp.Expr, schema: Schema | None = None) -> OdtNode | ParseFailure:
    """The ODT of a statement already parsed (and normalized) by ``parse_for_odt``, or why there is none."""
    try:
        return tree_from_ast(statement, schema)
    except NotAQueryError as error:
        return ParseFailure(str(error))
    except RecursionError:
        return ParseFailure("SQL nested too deeply to analyse")
