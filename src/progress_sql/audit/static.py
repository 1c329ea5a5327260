"""Static checks: read the gold's syntax tree (and the question); no execution except where a check
confirms a finding on the database (G13 re-runs the gold with real division when it can)."""

from __future__ import annotations

import re

from sqlglot import exp

from progress_sql.audit.check import Check, check, shorten
from progress_sql.audit.context import AuditContext
from progress_sql.audit.sqlinfo import int_literal, is_aggregate_level, resolve_column, selects
from progress_sql.sql.affinity import sqlite_affinity

#: Widest result the catalogue considers well specified (G21).
MAX_WIDTH = 8
_NONDETERMINISTIC = frozenset({"random", "randomblob", "changes", "last_insert_rowid", "total_changes", "curdate"})
_TIME_CLASSES = (exp.CurrentDate, exp.CurrentTime, exp.CurrentTimestamp, exp.Rand)


@check("G06", "limit-no-order", "static")
def limit_without_order(ctx: AuditContext) -> str | None:
    """LIMIT or OFFSET without ORDER BY at the same query level: which rows come back is arbitrary.

    Fires: ``SELECT name FROM singer LIMIT 1``. Does not fire: ``SELECT name FROM singer ORDER BY
    age LIMIT 1``, nor ``SELECT count(*) FROM singer LIMIT 1`` (one row whatever the order).
    """
    if ctx.tree is None:
        return None
    for node in ctx.tree.find_all(exp.Select, exp.SetOperation):
        if not (node.args.get("limit") or node.args.get("offset")) or node.args.get("order"):
            continue
        if isinstance(node, exp.Select) and is_aggregate_level(node) and not node.args.get("group"):
            continue
        return f"no ORDER BY at: {shorten(node.sql(dialect='sqlite'), 200)}"
    return None


@check("G10", "bare-column", "static")
def bare_column(ctx: AuditContext) -> str | None:
    """A column that is neither grouped nor aggregated in an aggregate query: SQLite returns it from
    an arbitrary row of the group (with a single MIN/MAX, from the extreme row; ties arbitrary).

    Fires: ``SELECT name, count(*) FROM singer``. Does not fire: ``SELECT country, count(*) FROM
    singer GROUP BY country``, nor ``SELECT T1.name, count(*) FROM singer AS T1 JOIN song AS T2
    ON T1.id = T2.singer_id GROUP BY T1.id`` (grouped by the primary key of the column's table).
    """
    if ctx.tree is None:
        return None
    for select in selects(ctx.tree):
        if not is_aggregate_level(select):
            continue
        grouped = list(select.args["group"].expressions) if select.args.get("group") else []
        grouped_text = {g.sql().lower() for g in grouped}
        # A grouped column fixes every column equal to it through a join condition.
        fixed = [c for g in grouped if isinstance(g, exp.Column) for c in _join_equals(g, select, ctx)]
        grouped_columns = {_key(c, ctx) for g in grouped for c in g.find_all(exp.Column)} | {
            _key(c, ctx) for c in fixed
        }
        keyed_tables = {
            resolved[0]
            for c in [*(g for g in grouped if isinstance(g, exp.Column)), *fixed]
            if (resolved := resolve_column(c, ctx.profile)) and resolved[1].primary_key
        }
        for expression in select.expressions:
            target = expression.this if isinstance(expression, exp.Alias) else expression
            if target.sql().lower() in grouped_text:
                continue
            for column in target.find_all(exp.Column):
                if _in_aggregate_or_subquery(column, select) or _key(column, ctx) in grouped_columns:
                    continue
                resolved = resolve_column(column, ctx.profile)
                if resolved is not None and resolved[0] in keyed_tables:
                    continue
                kind = "grouped query" if grouped else "aggregate query without GROUP BY"
                return f"bare column {column.sql()} in {kind}: {shorten(select.sql(dialect='sqlite'), 200)}"
    return None


def _key(column: exp.Column, ctx: AuditContext) -> str:
    resolved = resolve_column(column, ctx.profile)
    return f"{resolved[0]}.{resolved[1].name.lower()}" if resolved else column.name.lower()


def _join_equals(column: exp.Column, select: exp.Select, ctx: AuditContext) -> list[exp.Column]:
    """Columns that a join condition of this level equates with ``column``."""
    key = _key(column, ctx)
    equal: list[exp.Column] = []
    for join in select.args.get("joins") or ():
        condition = join.args.get("on")
        for eq in condition.find_all(exp.EQ) if condition is not None else ():
            left, right = eq.this, eq.expression
            if isinstance(left, exp.Column) and isinstance(right, exp.Column):
                if _key(left, ctx) == key:
                    equal.append(right)
                elif _key(right, ctx) == key:
                    equal.append(left)
    return equal


def _in_aggregate_or_subquery(node: exp.Expr, level: exp.Select) -> bool:
    parent = node.parent
    while parent is not None and parent is not level:
        if isinstance(parent, (exp.AggFunc, exp.Select, exp.Window)):
            return True
        parent = parent.parent
    return False


@check("G11", "nondet-function", "static")
def nondeterministic_function(ctx: AuditContext) -> str | None:
    """A function whose value changes between runs: ``random()``, ``'now'`` in date functions,
    ``CURRENT_DATE`` / ``CURRENT_TIMESTAMP``, ``YEAR(CURDATE())``, ``last_insert_rowid()``.

    Fires: ``SELECT name FROM t WHERE year < strftime('%Y', 'now')``. Does not fire:
    ``SELECT name FROM t WHERE year < strftime('%Y', '2020-01-01')``.
    """
    if ctx.tree is None:
        return None
    for node in ctx.tree.walk():
        if isinstance(node, _TIME_CLASSES):
            return f"non-deterministic: {node.sql(dialect='sqlite')}"
        if isinstance(node, exp.Anonymous) and node.name.lower() in _NONDETERMINISTIC:
            return f"non-deterministic: {node.sql(dialect='sqlite')}"
        if (
            isinstance(node, exp.Literal)
            and node.is_string
            and node.name.strip().lower() == "now"
            and isinstance(node.parent, exp.Func)
        ):
            return f"non-deterministic: {node.parent.sql(dialect='sqlite')}"
    return None


@check("G13", "int-division", "static")
def integer_division(ctx: AuditContext) -> str | None:
    """``/`` between two integer-typed operands (integer literals, COUNT, SUM or LENGTH of them,
    INTEGER/NUMERIC columns): SQLite truncates, so a ratio or percentage becomes 0. With the
    database at hand the check fires only when real division changes the result.

    Fires: ``SELECT count(*) / (SELECT count(*) FROM singer) FROM singer WHERE age > 30``. Does not
    fire: ``SELECT CAST(count(*) AS REAL) / (SELECT count(*) FROM singer) FROM singer WHERE age > 30``.
    """
    if ctx.tree is None:
        return None
    divisions = [d for d in ctx.tree.find_all(exp.Div) if _integer(d.this, ctx) and _integer(d.expression, ctx)]
    if not divisions:
        return None
    shown = ", ".join(d.sql(dialect="sqlite") for d in divisions[:3])
    if not ctx.db_available:
        return f"integer division: {shown}"
    if not ctx.gold_ok:
        return None
    rewritten = ctx.tree.copy()
    for division in rewritten.find_all(exp.Div):
        if _integer(division.this, ctx) and _integer(division.expression, ctx):
            division.set("this", exp.Cast(this=division.this.copy(), to=exp.DataType.build("REAL")))
    real = ctx.run(rewritten.sql(dialect="sqlite"))
    if not real.ok or sorted(map(repr, real.rows)) == sorted(map(repr, ctx.gold.rows)):
        return None
    return shorten(
        f"integer division {shown}: gold gives {list(ctx.gold.rows[:3])}, real division {list(real.rows[:3])}"
    )


def _integer(node: exp.Expr, ctx: AuditContext) -> bool:
    """Whether SQLite will compute ``node`` as an integer (as far as the tree and schema tell)."""
    if isinstance(node, exp.Paren):
        return _integer(node.this, ctx)
    if isinstance(node, exp.Subquery):
        inner = node.this
        return isinstance(inner, exp.Select) and len(inner.expressions) == 1 and _integer(inner.expressions[0], ctx)
    if isinstance(node, exp.Alias):
        return _integer(node.this, ctx)
    if isinstance(node, exp.Literal):
        return node.is_int
    if isinstance(node, (exp.Count, exp.Length)):
        return True
    if isinstance(node, (exp.Sum, exp.Max, exp.Min, exp.Abs, exp.Neg)):
        return _integer(node.this, ctx)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        return _integer(node.this, ctx) and _integer(node.expression, ctx)
    if isinstance(node, exp.Cast):
        return node.to.is_type(*exp.DataType.INTEGER_TYPES)
    if isinstance(node, exp.Column):
        resolved = resolve_column(node, ctx.profile)
        return resolved is not None and sqlite_affinity(resolved[1].declared) in ("integer", "numeric")
    return False


_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*[A-Za-z])")
_COMPARATORS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern + r"\s+(\d+(?:\.\d+)?)\b", re.IGNORECASE), op)
    for pattern, op in (
        (r"\b(?:more|greater|larger|higher|bigger|older|longer|heavier)\s+than", ">"),
        (r"\b(?:over|above|exceeding|exceeds?)", ">"),
        (r"\b(?:at\s+least|no\s+less\s+than|not\s+less\s+than|minimum\s+of)", ">="),
        (r"\b(?:less|fewer|smaller|lower|younger|shorter|lighter)\s+than", "<"),
        (r"\b(?:under|below)", "<"),
        (r"\b(?:at\s+most|no\s+more\s+than|not\s+more\s+than|maximum\s+of)", "<="),
    )
)
_FLIP = {">": "<", "<": ">", ">=": "<=", "<=": ">=", "=": "=", "!=": "!="}
_OPERATORS: dict[type[exp.Expr], str] = {
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.EQ: "=",
    exp.NEQ: "!=",
}


@check("G16", "question-literal-mismatch", "static")
def question_literal_mismatch(ctx: AuditContext) -> str | None:
    """A number in the question that the SQL never uses, or a comparator word that disagrees with
    the SQL's operator on that number ("more than 12" but ``= 12`` or ``>= 12``). A soft flag.

    Fires: "Singers older than 30?" with ``WHERE age >= 30``. Does not fire: "Singers older than
    30?" with ``WHERE age > 30``.
    """
    if ctx.tree is None:
        return None
    question = ctx.example.question
    literals = [node for node in ctx.tree.find_all(exp.Literal)]
    values = {_number(n.name) for n in literals if not n.is_string} | {
        _number(m) for n in literals if n.is_string for m in re.findall(r"\d+(?:\.\d+)?", n.name)
    }
    for pattern, expected in _COMPARATORS:
        for match in pattern.finditer(question):
            number = _number(match.group(1))
            used = _operators_on(ctx.tree, number)
            if used and expected not in used:
                return f"question says {match.group(0)!r}; the SQL compares {number:g} with {', '.join(sorted(used))}"
    for match in _NUMBER.finditer(question):
        number = _number(match.group(1))
        if number not in values:
            return f"question mentions {match.group(1)}; the SQL never uses it"
    return None


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _operators_on(tree: exp.Expr, number: float) -> set[str]:
    used: set[str] = set()
    for kind, op in _OPERATORS.items():
        for node in tree.find_all(kind):
            if isinstance(node.expression, exp.Literal) and not node.expression.is_string:
                if _number(node.expression.name) == number:
                    used.add(op)
            elif isinstance(node.this, exp.Literal) and not node.this.is_string and _number(node.this.name) == number:
                used.add(_FLIP[op])
    return used


_PLURAL = re.compile(r"^\s*(?:list|show|give|return|find)\s+(?:all|every|each)\b|\ball\s+(?:the\s+)?\w+s\b", re.I)


@check("G17", "plural-vs-limit1", "static")
def plural_versus_limit_one(ctx: AuditContext) -> str | None:
    """The question asks for several rows ("list all ...", "all the ...s") but the outermost query
    ends in LIMIT 1. A soft flag.

    Fires: "List all singers with the highest age." with ``ORDER BY age DESC LIMIT 1``. Does not
    fire: "Who is the oldest singer?" with the same SQL.
    """
    if ctx.tree is None or int_literal(ctx.tree.args.get("limit")) != 1:
        return None
    match = _PLURAL.search(ctx.example.question)
    return f"question says {match.group(0).strip()!r} but the SQL returns one row (LIMIT 1)" if match else None


@check("G21", "wide-or-star", "static")
def wide_or_star(ctx: AuditContext) -> str | None:
    """``SELECT *`` or more than eight result columns at the outermost level: the output the
    question wants is unclear and column matching gets expensive.

    Fires: ``SELECT * FROM singer``. Does not fire: ``SELECT count(*) FROM singer``.
    """
    if ctx.tree is None:
        return None
    outer = ctx.tree if isinstance(ctx.tree, exp.Select) else next(selects(ctx.tree), None)
    if outer is None:
        return None
    if any(
        isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
        for e in outer.expressions
    ):
        return "SELECT * at the outermost level"
    if len(outer.expressions) > MAX_WIDTH:
        return f"{len(outer.expressions)} result columns (more than {MAX_WIDTH})"
    return None


#: This family's checks, listed (:mod:`progress_sql.audit.catalogue` gathers the families).
CHECKS: tuple[Check, ...] = (
    limit_without_order,
    bare_column,
    nondeterministic_function,
    integer_division,
    question_literal_mismatch,
    plural_versus_limit_one,
    wide_or_star,
)
