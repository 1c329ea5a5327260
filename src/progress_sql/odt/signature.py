"""Canonical text signatures of SQL expressions, the atoms the ODT profile compares; the canonical form:
docs/odt.md#pipeline, step 4.

>>> from progress_sql.sql.parse import parse_sql
>>> select = parse_sql("SELECT T1.a FROM singer AS T1 WHERE 3 < T1.age")
>>> scope = Scope.for_sources([("singer", "singer", "t1")])
>>> Renderer(scope).render(select.args["where"].this)
'singer.age > ?'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from sqlglot import exp

from progress_sql.data.schema import Schema

SUBQUERY = "<subquery>"

_COMPARISON_OPS: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.NullSafeEQ: "is",
    exp.NullSafeNEQ: "is not",
}
_MIRRORED = {"=": "=", "<>": "<>", ">": "<", ">=": "<=", "<": ">", "<=": ">=", "is": "is", "is not": "is not"}
#: ``NOT a op b`` is ``a negated-op b`` (also under SQL's NULL logic: both sides are NULL together).
_NEGATED = {"=": "<>", "<>": "=", ">": "<=", ">=": "<", "<": ">=", "<=": ">", "is": "is not", "is not": "is"}
_ARITHMETIC_OPS: dict[type[exp.Expr], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.IntDiv: "/",
    exp.Mod: "%",
    exp.DPipe: "||",
    exp.BitwiseAnd: "&",
    exp.BitwiseOr: "|",
    exp.BitwiseLeftShift: "<<",
    exp.BitwiseRightShift: ">>",
}
_NEGATED_KEYWORD: dict[type[exp.Expr], str] = {
    exp.In: "in",
    exp.Like: "like",
    exp.ILike: "ilike",
    exp.Glob: "glob",
    exp.Between: "between",
    exp.Exists: "exists",
}


class Source(NamedTuple):
    """One FROM / JOIN source of a SELECT: its resolved name and, for base tables, the table name (a
    named tuple: one is built per source of every SELECT, and a frozen dataclass's ``__init__`` costs
    several times more)."""

    resolved: str
    table: str | None


@dataclass(slots=True)
class Scope:
    """Name resolution for one SELECT: alias -> source, with the enclosing query's scope as parent."""

    sources: list[Source] = field(default_factory=list)
    aliases: dict[str, Source] = field(default_factory=dict)
    schema: Schema | None = None
    parent: Scope | None = None

    @classmethod
    def for_sources(
        cls,
        entries: Sequence[tuple[str, str | None, str | None]],
        schema: Schema | None = None,
        parent: Scope | None = None,
    ) -> Scope:
        """Build a scope from ``(resolved_name, table_name, alias)`` triples."""
        scope = cls(schema=schema, parent=parent)
        for resolved, table, alias in entries:
            source = Source(resolved, table)
            scope.sources.append(source)
            if table is not None:
                scope.aliases.setdefault(table, source)
            if alias is not None:
                scope.aliases[alias] = source
        return scope

    def lookup_alias(self, name: str) -> Source | None:
        scope: Scope | None = self
        while scope is not None:
            source = scope.aliases.get(name)
            if source is not None:
                return source
            scope = scope.parent
        return None

    def owner_of(self, column: str) -> Source | None:
        """The source an unqualified column belongs to, when that is unambiguous."""
        scope: Scope | None = self
        while scope is not None:
            if scope.schema is not None:
                owners = [
                    s for s in scope.sources if s.table is not None and column in scope.schema.tables.get(s.table, ())
                ]
                if len(owners) == 1:
                    return owners[0]
                if owners:
                    return None
            elif len(scope.sources) == 1:
                return scope.sources[0]
            else:
                return None
            scope = scope.parent
        return None

    def has_column(self, column: str) -> bool:
        """Whether some base table in this scope is known to have ``column`` (needs a schema)."""
        if self.schema is None:
            return False
        return any(s.table is not None and column in self.schema.tables.get(s.table, ()) for s in self.sources)


Handler = Callable[["Renderer", exp.Expr], str]


class Renderer:
    """Renders expressions of one SELECT to signatures.

    ``output_aliases`` maps a SELECT-item alias to its expression; a bare column that names such an
    alias (and no column of the sources) is rendered as the aliased expression, so
    ``ORDER BY c`` with ``COUNT(*) AS c`` reads ``count(*)``.
    """

    __slots__ = ("items", "output_aliases", "scope", "subquery_text")

    def __init__(
        self,
        scope: Scope,
        output_aliases: Mapping[str, exp.Expr] | None = None,
        items: Sequence[exp.Expr] = (),
        *,
        subquery_text: bool = False,
    ) -> None:
        self.scope = scope
        self.output_aliases = output_aliases or {}
        self.items = items
        #: A nested query is written out (its SQL, values as ``?``) rather than as :data:`SUBQUERY`:
        #: for the clauses whose nested queries are not child nodes (``OdtConfig.nested_everywhere`` off).
        self.subquery_text = subquery_text

    def render(self, node: exp.Expr) -> str:
        handler = _RESOLVED.get(type(node))  # the handler lookup inlined: render runs for every node
        return (handler or _handler(type(node)))(self, node)

    def render_key(self, node: exp.Expr) -> str:
        """Render a GROUP BY / ORDER BY key: a positional number refers to a SELECT item."""
        if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            position = int(node.this)
            if 1 <= position <= len(self.items):
                return self.render(_unalias(self.items[position - 1]))
        return self.render(node)

    def column(self, node: exp.Column) -> str:
        name = node.name.lower()
        if isinstance(node.this, exp.Star):
            name = "*"
        qualifier = node.table.lower()
        if qualifier:
            source = self.scope.lookup_alias(qualifier)
            return f"{source.resolved if source else qualifier}.{name}"
        aliased = self.output_aliases.get(name)
        if aliased is not None and not self.scope.has_column(name):
            return self.render(aliased)
        owner = self.scope.owner_of(name)
        return f"{owner.resolved}.{name}" if owner else name


def _unalias(node: exp.Expr) -> exp.Expr:
    return node.this if isinstance(node, exp.Alias) else node


def _is_value(node: exp.Expr) -> bool:
    return isinstance(node, (exp.Literal, exp.Placeholder, exp.Parameter, exp.Boolean)) or (
        isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)
    )


def _comparison(r: Renderer, node: exp.Expr, negate: bool = False) -> str:
    op = _COMPARISON_OPS[type(node)]
    if negate:
        op = _NEGATED[op]
    left, right = node.this, node.expression
    left_text, right_text = r.render(left), r.render(right)
    left_value, right_value = _is_value(left), _is_value(right)
    # Values go right; two non-values are sorted, so that `a = b` and `b = a` read the same.
    if (left_value and not right_value) or (not left_value and not right_value and left_text > right_text):
        left_text, right_text, op = right_text, left_text, _MIRRORED[op]
    return f"{left_text} {op} {right_text}"


def _connective(r: Renderer, node: exp.Expr) -> str:
    word = "and" if isinstance(node, exp.And) else "or"
    parts = sorted(r.render(part) for part in node.flatten())
    return f"({f' {word} '.join(parts)})"


def _arithmetic(r: Renderer, node: exp.Expr) -> str:
    return f"({r.render(node.this)} {_ARITHMETIC_OPS[type(node)]} {r.render(node.expression)})"


def _like(r: Renderer, node: exp.Expr, negate: bool = False) -> str:
    word = _NEGATED_KEYWORD[type(node)]
    if negate or node.args.get("negate"):
        word = f"not {word}"
    return f"{r.render(node.this)} {word} {r.render(node.expression)}"


def _in(r: Renderer, node: exp.Expr, negate: bool = False) -> str:
    word = "not in" if negate or node.args.get("negate") else "in"
    if node.args.get("query") is not None:
        return f"{r.render(node.this)} {word} {SUBQUERY}"
    values = node.expressions
    if all(_is_value(v) for v in values):
        return f"{r.render(node.this)} {word} (?)"
    return f"{r.render(node.this)} {word} ({', '.join(r.render(v) for v in values)})"


def _between(r: Renderer, node: exp.Expr, negate: bool = False) -> str:
    word = "not between" if negate or node.args.get("negate") else "between"
    return f"{r.render(node.this)} {word} {r.render(node.args['low'])} and {r.render(node.args['high'])}"


def _is(r: Renderer, node: exp.Expr) -> str:
    return f"{r.render(node.this)} is {r.render(node.expression)}"


def _not(r: Renderer, node: exp.Expr) -> str:
    inner = node.this
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.Is):
        return f"{r.render(inner.this)} is not {r.render(inner.expression)}"
    if isinstance(inner, exp.Not):  # NOT NOT x is x
        return r.render(inner.this)
    negatable = _NEGATABLE.get(type(inner))
    if negatable is not None and not inner.args.get("negate"):
        return negatable(r, inner, True)
    return f"not {r.render(inner)}"


def _exists(r: Renderer, node: exp.Expr, negate: bool = False) -> str:
    return f"{'not ' if negate or node.args.get('negate') else ''}exists {SUBQUERY}"


def _ordered(r: Renderer, node: exp.Expr) -> str:
    return f"{r.render_key(node.this)} {'desc' if node.args.get('desc') else 'asc'}"


def _distinct(r: Renderer, node: exp.Expr) -> str:
    return "distinct " + ", ".join(r.render(e) for e in node.expressions)


def _cast(r: Renderer, node: exp.Expr) -> str:
    target = node.args.get("to")
    type_name = target.sql(dialect="sqlite").lower() if isinstance(target, exp.Expr) else "?"
    return f"cast({r.render(node.this)} as {type_name})"


def _function(r: Renderer, node: exp.Expr) -> str:
    name = node.name.lower() if isinstance(node, exp.Anonymous) else node.key
    args = ", ".join(r.render(child) for child in node.iter_expressions())
    return f"{name}({args})"


def _nested_query(r: Renderer, node: exp.Expr) -> str:
    """:data:`SUBQUERY` where nested queries are child nodes; elsewhere the query's own text with every
    literal a ``?`` (lexical values normalized, as the profile's other signatures), lower case."""
    if not r.subquery_text:
        return SUBQUERY
    valueless = node.copy().transform(lambda x: exp.Placeholder() if isinstance(x, exp.Literal) else x)
    return valueless.sql().lower()


def _generic(r: Renderer, node: exp.Expr) -> str:
    children = [r.render(child) for child in node.iter_expressions()]
    return f"{node.key}({', '.join(children)})" if children else node.key


_HANDLERS: dict[type[exp.Expr], Handler] = {
    exp.Column: Renderer.column,  # type: ignore[dict-item]
    exp.Star: lambda r, n: "*",
    exp.Literal: lambda r, n: "?",
    exp.Placeholder: lambda r, n: "?",
    exp.Parameter: lambda r, n: "?",
    exp.Boolean: lambda r, n: "?",
    exp.Null: lambda r, n: "null",
    exp.Neg: lambda r, n: "?" if _is_value(n) else f"-{r.render(n.this)}",
    exp.Paren: lambda r, n: r.render(n.this),
    exp.Alias: lambda r, n: r.render(n.this),
    exp.Identifier: lambda r, n: n.name.lower(),
    exp.Subquery: lambda r, n: _nested_query(r, n),
    exp.Query: lambda r, n: _nested_query(r, n),
    exp.And: _connective,
    exp.Or: _connective,
    exp.In: _in,
    exp.Between: _between,
    exp.Is: _is,
    exp.Not: _not,
    exp.Exists: _exists,
    exp.Ordered: _ordered,
    exp.Distinct: _distinct,
    exp.Cast: _cast,
    exp.Func: _function,
    **dict.fromkeys(_COMPARISON_OPS, _comparison),
    **dict.fromkeys(_ARITHMETIC_OPS, _arithmetic),
    **dict.fromkeys((exp.Like, exp.ILike, exp.Glob), _like),
}


_NEGATABLE: dict[type[exp.Expr], Callable[[Renderer, exp.Expr, bool], str]] = {
    exp.In: _in,
    exp.Between: _between,
    exp.Exists: _exists,
    exp.Like: _like,
    exp.ILike: _like,
    exp.Glob: _like,
    **dict.fromkeys(_COMPARISON_OPS, _comparison),
}


_RESOLVED: dict[type[exp.Expr], Handler] = {}


def _handler(node_type: type[exp.Expr]) -> Handler:
    """The handler of the most specific registered class in ``node_type``'s MRO (memoized)."""
    handler = _RESOLVED.get(node_type)
    if handler is None:
        handler = next((_HANDLERS[k] for k in node_type.__mro__ if k in _HANDLERS), _generic)
        _RESOLVED[node_type] = handler
    return handler
