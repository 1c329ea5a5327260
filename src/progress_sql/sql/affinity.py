"""SQLite's type affinity carried into a transpiled query (docs/semantics.md#transpiling-sqlite-golds).

SQLite types values, not columns: a column declared ``INT`` may hold ``'null'`` beside its numbers, a
``TEXT`` column may hold ``'2014'``; a comparison converts one side by the affinity rules
(https://sqlite.org/datatype3.html, 4.2) and ``avg`` / ``sum`` / arithmetic read text as a number.
PostgreSQL and DuckDB refuse ``text = integer`` and ``avg(text)``. ``port-db`` stores a column holding
any text as text (``execution/port.py``); :func:`apply_affinity` rewrites the comparisons, aggregates
and arithmetic over such columns as SQLite evaluates them, given each column's declared affinity and
the class the port stored it as.

>>> from sqlglot import parse_one
>>> types = {"cars": {"hp": ColumnType("text", "text"), "id": ColumnType("integer", "integer"),
...                   "mpg": ColumnType("real", "text")}}
>>> print(apply_affinity(parse_one("SELECT avg(mpg) FROM cars WHERE hp > 150"), types, "duckdb").sql("duckdb"))
SELECT AVG(COALESCE(TRY_CAST(mpg AS DOUBLE), CASE WHEN NOT mpg IS NULL THEN 0 END)) FROM cars WHERE hp > '150'
>>> print(apply_affinity(parse_one("SELECT 1 FROM cars WHERE id = hp"), types, "duckdb").sql("duckdb")[25:])
id = COALESCE(TRY_CAST(hp AS DOUBLE), CASE WHEN NOT hp IS NULL THEN CAST('Infinity' AS DOUBLE) END)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

Affinity = Literal["integer", "real", "numeric", "text", "blob"]
#: What a ported column holds in the engine (``port.portable_class``).
StoredAs = Literal["integer", "real", "text", "blob"]
_Class = Literal["number", "text"]


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A column's SQLite affinity (from its declared type) and the class the port stored it as."""

    affinity: Affinity
    stored_as: StoredAs


#: Lower-cased table name -> lower-cased column name -> its type.
TypedColumns = Mapping[str, Mapping[str, ColumnType]]


def sqlite_affinity(declared: str) -> Affinity:
    """A declared type's affinity by SQLite's rules (datatype3.html, 3.1), in their order.
    ("FLOATING POINT" holds "INT": integer, as the rules say).

    >>> [sqlite_affinity(t) for t in ("INTEGER", "varchar(20)", "BLOB", "", "DOUBLE", "DATE", "FLOATING POINT")]
    ['integer', 'text', 'blob', 'blob', 'real', 'numeric', 'integer']
    """
    upper = declared.upper()
    if "INT" in upper:
        return "integer"
    if any(word in upper for word in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if not upper or "BLOB" in upper:
        return "blob"
    if any(word in upper for word in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "numeric"


_NUMERIC: frozenset[str] = frozenset({"integer", "real", "numeric"})
#: Text that SQLite reads as a number (leading and trailing spaces allowed).
_NUMBER_TEXT = r"^\s*[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\s*$"
_COMPARISONS: tuple[type[exp.Expr], ...] = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_ARITHMETIC: tuple[type[exp.Expr], ...] = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


def apply_affinity(tree: exp.Expr, types: TypedColumns, dialect: str) -> exp.Expr:
    """Rewrite ``tree`` (in place) so that ``dialect``'s engine compares and computes as SQLite does
    over columns the port stored as text: a text column compared with a number reads as a number
    where SQLite applies numeric affinity (text that is not a number as +infinity: SQLite orders text
    above numbers) and the
    number reads as text where SQLite applies text affinity; ``avg`` / ``sum`` / ``total`` and
    arithmetic read text as a number (0 for text that is not one, as SQLite does)."""
    if not types:
        return tree
    try:
        resolved = _resolve_columns(tree, types)
    except Exception:  # a scope sqlglot cannot build: leave the query as it is
        return tree
    if not resolved:
        return tree
    typer = _Typer(resolved)
    # Aggregates and arithmetic first: the comparisons' rewrites copy what they wrap.
    for aggregate in list(tree.find_all(exp.Avg, exp.Sum)):
        if typer.kind(aggregate.this)[1] == "text":
            aggregate.set("this", _number_or_zero(aggregate.this, dialect))
    for node in list(tree.find_all(*_ARITHMETIC)):
        for side in ("this", "expression"):
            operand = node.args.get(side)
            if operand is not None and typer.kind(operand)[1] == "text" and not isinstance(operand, exp.Literal):
                node.set(side, _number_or_zero(operand, dialect))
    for node in list(tree.find_all(*_COMPARISONS)):
        _compare(node, "this", "expression", typer, dialect)
    for between in list(tree.find_all(exp.Between)):
        for side in ("low", "high"):
            _compare(between, "this", side, typer, dialect)
    for membership in list(tree.find_all(exp.In)):
        query = membership.args.get("query")
        if query is not None:
            _compare_query(membership, query, typer, dialect)
        else:
            for index in range(len(membership.expressions)):
                _compare_item(membership, index, typer, dialect)
    return tree


def _resolve_columns(tree: exp.Expr, types: TypedColumns) -> dict[int, ColumnType]:
    """Each column node's type, by the table its scope reads it from (innermost scope first)."""
    found: dict[int, ColumnType] = {}
    seen: set[int] = set()
    for scope in traverse_scope(tree):
        for column in scope.columns:
            if id(column) in seen:
                continue
            seen.add(id(column))
            kind = _column_type(scope, column, types)
            if kind is not None:
                found[id(column)] = kind
    return found


def _column_type(scope: Scope, column: exp.Column, types: TypedColumns) -> ColumnType | None:
    name = column.name.lower()
    if column.table:
        source = scope.sources.get(column.table)
        if isinstance(source, exp.Table):
            return types.get(source.name.lower(), {}).get(name)
        return None
    candidates = [
        types[s.name.lower()][name]
        for s in scope.sources.values()
        if isinstance(s, exp.Table) and name in types.get(s.name.lower(), {})
    ]
    return candidates[0] if len(candidates) == 1 else None


class _Typer:
    """SQLite's affinity and the engine's class (number / text) of an expression, where known."""

    def __init__(self, resolved: Mapping[int, ColumnType]) -> None:
        self.resolved = resolved

    def kind(self, node: exp.Expr) -> tuple[Affinity | None, _Class | None]:
        if isinstance(node, exp.Column):
            typed = self.resolved.get(id(node))
            if typed is None:
                return None, None
            stored: _Class | None = {"integer": "number", "real": "number", "text": "text"}.get(typed.stored_as)  # type: ignore[assignment]
            return typed.affinity, stored
        if isinstance(node, exp.Literal):
            return None, "text" if node.is_string else "number"
        if isinstance(node, exp.Neg):
            return None, self.kind(node.this)[1]
        if isinstance(node, exp.Paren | exp.Alias):
            return self.kind(node.this)
        if isinstance(node, exp.Subquery):
            return self.kind(node.this)
        if isinstance(node, exp.Select):
            projections = node.expressions
            return self.kind(projections[0]) if len(projections) == 1 else (None, None)
        if isinstance(node, (exp.Count, exp.Avg, exp.Sum, *_ARITHMETIC)):
            return None, "number"
        if isinstance(node, exp.Max | exp.Min):
            return self.kind(node.this)
        return None, None


def _compare(node: exp.Expr, left: str, right: str, typer: _Typer, dialect: str) -> None:
    a, b = node.args.get(left), node.args.get(right)
    if a is None or b is None:
        return
    fixed = _converted(a, b, typer, dialect)
    if fixed is not None:
        node.set(left, fixed[0])
        node.set(right, fixed[1])


def _compare_item(node: exp.In, index: int, typer: _Typer, dialect: str) -> None:
    item = node.expressions[index]
    fixed = _converted(node.this, item, typer, dialect)
    if fixed is not None:
        node.set("this", fixed[0])
        items = list(node.expressions)
        items[index] = fixed[1]
        node.set("expressions", items)


def _compare_query(node: exp.In, query: exp.Expr, typer: _Typer, dialect: str) -> None:
    select = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(select, exp.Select) or len(select.expressions) != 1:
        return
    projection = select.expressions[0]
    inner = projection.this if isinstance(projection, exp.Alias) else projection
    fixed = _converted(node.this, inner, typer, dialect)
    if fixed is not None:
        node.set("this", fixed[0])
        inner.replace(fixed[1])


def _converted(a: exp.Expr, b: exp.Expr, typer: _Typer, dialect: str) -> tuple[exp.Expr, exp.Expr] | None:
    """The two operands of a comparison as SQLite compares them (datatype3.html, 4.2), or None when
    the engine already compares them alike (same class, or a class unknown)."""
    (aff_a, class_a), (aff_b, class_b) = typer.kind(a), typer.kind(b)
    if class_a is None or class_b is None or class_a == class_b:
        return None
    swapped = class_a == "number"
    text, number = (b, a) if swapped else (a, b)
    aff_text, aff_number = (aff_b, aff_a) if swapped else (aff_a, aff_b)
    if aff_text == "text" and aff_number is None:  # text affinity applied to the number
        new_text, new_number = text, _as_text(number)
    else:  # numeric affinity applied to the text (or no conversion: the nearest the engine has)
        new_text, new_number = _number_or(text, dialect, _TEXT_ABOVE_NUMBERS), number
    return (new_number, new_text) if swapped else (new_text, new_number)


def _as_text(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Literal) and not node.is_string:
        return exp.Literal.string(node.this)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return exp.Literal.string("-" + node.this.this)
    return exp.Cast(this=node.copy(), to=exp.DataType.build("text"))


#: SQLite orders any text above any number: a text that is not a number compares as +infinity.
_TEXT_ABOVE_NUMBERS = exp.Cast(this=exp.Literal.string("Infinity"), to=exp.DataType.build("double"))


def _safe_number(node: exp.Expr, dialect: str) -> exp.Expr:
    """``node``'s text as a double, NULL where it is not a number (the engines' casts would fail)."""
    double = exp.DataType.build("double")
    if dialect == "duckdb":
        return exp.TryCast(this=node.copy(), to=double)
    looks = exp.RegexpLike(this=node.copy(), expression=exp.Literal.string(_NUMBER_TEXT))
    return exp.Case().when(looks, exp.Cast(this=node.copy(), to=double))


def _number_or(node: exp.Expr, dialect: str, otherwise: exp.Expr) -> exp.Expr:
    """``node``'s text as a number, ``otherwise`` for text that is not one, NULL for NULL."""
    present = exp.Not(this=exp.Is(this=node.copy(), expression=exp.Null()))
    fallback = exp.Case().when(present, otherwise.copy())
    return exp.Coalesce(this=_safe_number(node, dialect), expressions=[fallback])


def _number_or_zero(node: exp.Expr, dialect: str) -> exp.Expr:
    """``node``'s text as SQLite's arithmetic reads it: its number, 0 for other text, NULL for NULL."""
    return _number_or(node, dialect, exp.Literal.number(0))


__all__ = ["Affinity", "ColumnType", "StoredAs", "TypedColumns", "apply_affinity", "sqlite_affinity"]
