"""Perturbation checks: run the gold rewritten (without its LIMIT, with DISTINCT stripped, counting
distinct entities) or on temporary copies of its database whose rows are stored in another order,
and compare with the original result."""

from __future__ import annotations

from collections import Counter

from sqlglot import exp

from progress_sql.audit.check import Check, check, shorten
from progress_sql.audit.context import AuditContext
from progress_sql.audit.copies import VARIANT_ORDER
from progress_sql.audit.sqlinfo import int_literal, keyed_query, level_tables, selects
from progress_sql.judge.sqltext import strip_distinct
from progress_sql.types import ExecResult, Row


def _ordered(ctx: AuditContext) -> bool:
    """Whether row order is part of the gold's answer: its outermost level has ORDER BY."""
    if ctx.tree is None:
        return "order by" in " ".join(ctx.example.gold_sql.lower().split())
    return bool(ctx.tree.args.get("order"))


def _same(ctx: AuditContext, original: ExecResult, other: ExecResult) -> bool:
    """The same rows (as a sequence when the gold orders its output, else as a bag), floats compared
    to 10 significant digits: summing in another order changes the last bits of a float, which is
    not the kind of order dependence these checks look for."""
    if not other.ok or other.truncated:
        return False
    a, b = _rounded(original.rows), _rounded(other.rows)
    return a == b if _ordered(ctx) else Counter(a) == Counter(b)


def _rounded(rows: tuple[Row, ...]) -> list[Row]:
    return [tuple(float(f"{v:.10g}") if isinstance(v, float) else v for v in row) for row in rows]


def _rows(result: ExecResult, limit: int = 3) -> str:
    if not result.ok:
        return f"{result.status}: {result.error}"
    more = f" ... ({len(result.rows)} rows)" if len(result.rows) > limit else ""
    return f"{list(result.rows[:limit])}{more}"


def _difference(original: ExecResult, other: ExecResult) -> str:
    """Where two results part: the first differing position of the row sequences."""
    if not other.ok:
        return _rows(other)
    for position, (a, b) in enumerate(zip(original.rows, other.rows, strict=False)):
        if _rounded((a,)) != _rounded((b,)):
            return f"row {position + 1} is {b!r} instead of {a!r} ({len(other.rows)} vs {len(original.rows)} rows)"
    return f"{len(other.rows)} rows instead of {len(original.rows)}"


@check("G07", "tie-at-limit", "perturbation")
def tie_at_limit(ctx: AuditContext) -> str | None:
    """``ORDER BY ... LIMIT n`` cuts through rows tied on every ORDER BY key: the gold keeps an
    arbitrary member of the tie. Checked at every query level whose LIMIT is a literal (sub-queries
    such as ``= (SELECT ... LIMIT 1)`` too, when they run on their own).

    Fires: ``SELECT name FROM player ORDER BY score DESC LIMIT 2`` with scores 99, 90, 90. Does not
    fire: ``... LIMIT 1`` (99 is alone) or ``ORDER BY score DESC, name LIMIT 2``.
    """
    if not ctx.gold_ok or ctx.tree is None:
        return None
    for select in selects(ctx.tree):
        limit = int_literal(select.args.get("limit"))
        if limit is None:
            continue
        offset = int_literal(select.args.get("offset")) or 0
        keyed = keyed_query(select, offset + limit + 1, keep_offset=False)
        if keyed is None:
            continue
        sql, width = keyed
        result = ctx.run(sql)
        if not result.ok or len(result.rows) <= offset + limit or offset + limit == 0:
            continue
        kept, dropped = result.rows[offset + limit - 1], result.rows[offset + limit]
        if kept[-width:] == dropped[-width:]:
            return shorten(
                f"LIMIT {limit} ends inside a tie on ORDER BY key {kept[-width:]!r}: last kept row "
                f"{kept[:-width]!r}, first dropped row {dropped[:-width]!r}"
            )
    return None


@check("G12", "order-dependence", "perturbation")
def order_dependence(ctx: AuditContext) -> str | None:
    """The gold's result changes when the tables' rows are stored in another order (a temporary
    copy with rows reversed and scans reversed, and one shuffled): LIMIT without ORDER BY, ties,
    bare columns, ``group_concat``.

    Fires: ``SELECT name, count(*) FROM singer`` (the name comes from an arbitrary row). Does not
    fire: ``SELECT count(*) FROM singer``. SQLite keeps the first row reaching a MAX/MIN whatever
    the scan order, so ties under a single MAX/MIN are not exposed here (G07 and G10 cover them).
    """
    if not ctx.gold_ok or ctx.copies is None:
        return None
    for variant in VARIANT_ORDER:
        other = ctx.run(ctx.example.gold_sql, variant)
        if not _same(ctx, ctx.gold, other):
            return shorten(f"{variant} copy: {_difference(ctx.gold, other)}")
    return None


@check("G19", "join-fanout-count", "perturbation")
def join_fanout_count(ctx: AuditContext) -> str | None:
    """A COUNT over a join counts repeated rows: ``COUNT(T.col)`` differs from counting the distinct
    rows of T (unless the level groups by a column of T), or ``COUNT(*)`` differs from counting the
    distinct rows of every table of the join.

    Fires: ``SELECT count(*) FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id JOIN
    song AS T3 ON T1.singer_id = T3.singer_id`` (song pairs). Does not fire: ``SELECT count(*) FROM
    singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id`` (it counts songs).
    """
    if not ctx.gold_ok or ctx.tree is None:
        return None
    for index, count in enumerate(ctx.tree.find_all(exp.Count)):
        select = count.find_ancestor(exp.Select)
        if not isinstance(select, exp.Select) or not select.args.get("joins") or isinstance(count.this, exp.Distinct):
            continue
        if isinstance(count.this, exp.Column) and count.this.table:
            if count.this.table.lower() in _grouped_tables(select):
                continue  # one row of that table per group: counting its column counts the joined rows
            candidates = [count.this.table]
        elif isinstance(count.this, exp.Star):
            candidates = list(level_tables(select))
        else:
            continue
        alternatives = []
        for alias in candidates:
            rewritten = ctx.tree.copy()
            target = list(rewritten.find_all(exp.Count))[index]
            target.set("this", exp.Distinct(expressions=[exp.column("rowid", table=alias)]))
            distinct = ctx.run(rewritten.sql(dialect="sqlite"))
            if not distinct.ok or _same(ctx, ctx.gold, distinct):
                break
            alternatives.append(f"{alias}: {_rows(distinct, 2)}")
        else:
            if alternatives:
                return shorten(
                    f"{count.sql()} = {_rows(ctx.gold, 2)}; counting distinct rows of {'; '.join(alternatives)}"
                )
    return None


def _grouped_tables(select: exp.Select) -> set[str]:
    group = select.args.get("group")
    return {c.table.lower() for c in group.find_all(exp.Column) if c.table} if group is not None else set()


@check("G24", "distinct-strip", "perturbation")
def distinct_strip_sensitivity(ctx: AuditContext) -> str | None:
    """Removing DISTINCT, as the Spider evaluator does by default, changes the gold's result or
    breaks it: a prediction is judged against another query than the one written.

    Fires: ``SELECT DISTINCT country FROM singer`` (countries repeat). Does not fire:
    ``SELECT DISTINCT name FROM singer`` (names are unique), nor any query without DISTINCT.
    """
    if not ctx.gold_ok or "distinct" not in ctx.example.gold_sql.lower():
        return None
    stripped = strip_distinct(ctx.example.gold_sql)
    if stripped == ctx.example.gold_sql:
        return None
    other = ctx.run(stripped)
    if other.ok and not other.truncated and Counter(other.rows) == Counter(ctx.gold.rows):
        return None
    return shorten(f"without DISTINCT: {_rows(other)} instead of {_rows(ctx.gold)}")


#: This family's checks, listed (:mod:`progress_sql.audit.catalogue` gathers the families).
CHECKS: tuple[Check, ...] = (
    tie_at_limit,
    order_dependence,
    join_fanout_count,
    distinct_strip_sensitivity,
)
