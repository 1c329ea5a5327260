"""Single-execution checks: run the gold once on its database (read-only, with a deadline) and look at
the result, plus look-ups of compared values. Each passes when the database file is absent."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from sqlglot import exp

from progress_sql.audit.check import Check, check, shorten
from progress_sql.audit.context import AuditContext
from progress_sql.audit.sqlinfo import (
    int_literal,
    keyed_query,
    order_keys,
    quote_string,
    resolve_column,
    selects,
)
from progress_sql.data.introspect import quote_identifier
from progress_sql.judge.compare import get_preset, judge
from progress_sql.testsuite.neighbors import neighbour_candidates

#: G05: neighbours tried per gold, how many must execute, and the share that must agree with the gold.
DEGENERATE_NEIGHBOURS = 30
DEGENERATE_MIN_NEIGHBOURS = 5
DEGENERATE_SHARE = 0.8
#: G05: a neighbour may run this many times the gold's time, and at least this many seconds.
DEGENERATE_TIME_FACTOR = 5.0
DEGENERATE_MIN_SECONDS = 0.05
#: More rows than this is a "huge" gold result (G22).
HUGE_ROWS = 10_000
#: Share of a column's stored values that must be numbers stored as text for G09.
TEXT_NUMBER_SHARE = 0.9
_NUMERIC_TEXT = re.compile(r"^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$")


@check("G01", "exec-error", "execution")
def execution_error(ctx: AuditContext) -> str | None:
    """The gold fails on its database: no prediction can earn the reward.

    Fires: ``SELECT nme FROM singer``. Does not fire: ``SELECT name FROM singer``.
    """
    if ctx.db_available and ctx.gold.status == "error":
        return shorten(f"gold fails: {ctx.gold.error}")
    return None


@check("G02", "timeout", "execution")
def timeout(ctx: AuditContext) -> str | None:
    """The gold does not finish within the audit's deadline (Arctic-Text2SQL-R1 drops golds over 5 s).

    Fires: a recursive CTE counting to 10^9. Does not fire: the same CTE counting to 10.
    """
    if ctx.db_available and ctx.gold.status == "timeout":
        return f"gold {ctx.gold.error}"
    return None


@check("G03", "empty", "execution")
def empty_result(ctx: AuditContext) -> str | None:
    """The gold returns no rows: any query returning nothing (``WHERE 0``) matches it.

    Fires: ``SELECT name FROM singer WHERE age > 200``. Does not fire: ``... WHERE age > 20``.
    """
    return "gold returns 0 rows" if ctx.gold_ok and not ctx.gold.rows else None


@check("G04", "null-only", "execution")
def null_only(ctx: AuditContext) -> str | None:
    """Every cell of the gold's result is NULL (e.g. AVG over no rows): as uninformative as empty.

    Fires: ``SELECT avg(age) FROM singer WHERE age > 200``. Does not fire: ``SELECT avg(age) FROM singer``.
    """
    if ctx.gold_ok and ctx.gold.rows and all(v is None for row in ctx.gold.rows for v in row):
        return f"all {len(ctx.gold.rows)} row(s) are NULL"
    return None


@check("G05", "degenerate", "execution")
def degenerate(ctx: AuditContext) -> str | None:
    """The result cannot tell near-misses apart: a single cell equal to 0, or most single-edit
    neighbours of the gold (testsuite.neighbors: a dropped condition, a swapped comparison or
    column, a perturbed literal) return the same result on this database, so an EX match says
    little about the query (only test-suite databases can).

    Fires: ``SELECT count(*) FROM singer WHERE age > 200``; ``SELECT name FROM singer WHERE age > 20
    AND country = 'Atlantis'`` (no such country: nearly every edit of the age condition also returns
    nothing). Does not fire: ``SELECT count(*) FROM singer``; ``SELECT name FROM singer WHERE age > 20``.
    """
    if not ctx.gold_ok:
        return None
    if len(ctx.gold.rows) == 1 and len(ctx.gold.rows[0]) == 1:
        value = ctx.gold.rows[0][0]
        if isinstance(value, (int, float)) and value == 0:
            return f"single cell {value!r}"
    if ctx.schema is None:
        return None
    preset = get_preset("spider")
    gold = [ctx.gold]
    # A neighbour without its join condition can be a huge cross product: it gets a deadline scaled
    # to the gold's own time, and one that runs out counts as not executed.
    deadline = min(ctx.limits.timeout_s, max(DEGENERATE_MIN_SECONDS, DEGENERATE_TIME_FACTOR * ctx.gold.elapsed_s))
    # More rows than twice the gold's already tells the neighbour apart: no need to fetch them all.
    limits = replace(ctx.limits, timeout_s=deadline, max_rows=max(100, 2 * len(ctx.gold.rows)))
    same: list[str] = []
    executed = 0
    for neighbour in neighbour_candidates(ctx.example.gold_sql, ctx.schema, limit=DEGENERATE_NEIGHBOURS):
        result = ctx.run(neighbour, limits=limits)
        if result.ok:
            executed += 1
            if not result.truncated and judge(preset, ctx.example.gold_sql, gold, result).match:
                same.append(neighbour)
    if executed >= DEGENERATE_MIN_NEIGHBOURS and len(same) >= DEGENERATE_SHARE * executed:
        return shorten(f"{len(same)} of {executed} neighbours return the same result, e.g. {same[0]}")
    return None


@check("G08", "null-first-sort", "execution")
def null_first_sort(ctx: AuditContext) -> str | None:
    """A row the gold returns under ORDER BY ... LIMIT has a NULL sort key: SQLite sorts NULL first
    in ascending order, so "the lowest X" is answered by a row without X.

    Fires: ``SELECT name FROM singer ORDER BY age LIMIT 1`` when some age is NULL. Does not fire:
    ``SELECT name FROM singer WHERE age IS NOT NULL ORDER BY age LIMIT 1``.
    """
    if not ctx.gold_ok or not isinstance(ctx.tree, exp.Select) or ctx.tree.args.get("limit") is None:
        return None
    keyed = keyed_query(ctx.tree, int_literal(ctx.tree.args.get("limit")), keep_offset=True)
    if keyed is None:
        return None
    sql, width = keyed
    result = ctx.run(sql)
    for row in result.rows if result.ok else ():
        if any(value is None for value in row[-width:]):
            return shorten(f"returned row {row[:-width]!r} has a NULL ORDER BY key")
    return None


@check("G09", "text-number", "execution")
def text_number(ctx: AuditContext) -> str | None:
    """A column sorted (ORDER BY, MIN, MAX) or compared with ``<`` / ``>`` holds numbers stored as
    TEXT, and text order differs from numeric order on its values (``'100' < '20'``).

    Fires: ``SELECT name FROM t ORDER BY height_text DESC LIMIT 1`` with heights '95', '180'. Does
    not fire: the same on an INTEGER column, or on text numbers of equal width ('1990', '2001').
    """
    if not ctx.gold_ok or ctx.tree is None:
        return None
    for column, use in _sorted_or_compared(ctx.tree):
        resolved = resolve_column(column, ctx.profile)
        if resolved is None:
            continue
        table, info = resolved
        values = ctx.column_values(table, info.name)
        texts = [v for v in values if isinstance(v, str) and _NUMERIC_TEXT.match(v)]
        if not values or len(texts) < TEXT_NUMBER_SHARE * len(values):
            continue
        distinct = sorted(set(texts))
        if distinct != sorted(distinct, key=lambda v: (float(v), v)):
            share = 100 * len(texts) / len(values)
            return (
                f"{table}.{info.name}: {share:.0f}% of {len(values)} values are numbers stored as TEXT; used in {use}"
            )
    return None


def _sorted_or_compared(tree: exp.Expr) -> list[tuple[exp.Column, str]]:
    found: list[tuple[exp.Column, str]] = []
    for select in selects(tree):
        found += [(k, "ORDER BY") for k in order_keys(select) if isinstance(k, exp.Column)]
    for function in tree.find_all(exp.Max, exp.Min):
        if isinstance(function.this, exp.Column):
            found.append((function.this, f"{function.key.upper()}()"))
    for comparison in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between):
        if isinstance(comparison.this, exp.Column):
            found.append((comparison.this, "a < / > comparison"))
    return found


def _compared_literals(tree: exp.Expr) -> list[tuple[exp.Column, str]]:
    pairs: list[tuple[exp.Column, str]] = []
    for comparison in tree.find_all(exp.EQ, exp.NEQ):
        left, right = comparison.this, comparison.expression
        if isinstance(left, exp.Column) and isinstance(right, exp.Literal) and right.is_string:
            pairs.append((left, right.name))
        elif isinstance(right, exp.Column) and isinstance(left, exp.Literal) and left.is_string:
            pairs.append((right, left.name))
    for membership in tree.find_all(exp.In):
        if isinstance(membership.this, exp.Column):
            pairs += [
                (membership.this, e.name) for e in membership.expressions if isinstance(e, exp.Literal) and e.is_string
            ]
    return pairs


def _unmatched_literals(ctx: AuditContext) -> list[tuple[str, str | None]]:
    """Compared string literals stored nowhere exactly: (description, a case-insensitive match or None)."""
    if not ctx.gold_ok or ctx.tree is None:
        return []
    found: list[tuple[str, str | None]] = []
    for column, literal in _compared_literals(ctx.tree):
        resolved = resolve_column(column, ctx.profile)
        if resolved is None:
            continue
        table, info = resolved
        where = f"FROM {quote_identifier(table)} WHERE {quote_identifier(info.name)} = {quote_string(literal)}"
        exact = ctx.run(f"SELECT EXISTS(SELECT 1 {where})")
        if not exact.ok or exact.rows[0][0]:
            continue
        loose = ctx.run(f"SELECT {quote_identifier(info.name)} {where} COLLATE NOCASE LIMIT 1")
        stored = str(loose.rows[0][0]) if loose.ok and loose.rows else None
        found.append((f"{literal!r} is not a stored value of {table}.{info.name}", stored))
    return found


@check("G14", "case-literal", "execution")
def case_mismatched_literal(ctx: AuditContext) -> str | None:
    """A string literal compared with ``=``, ``!=`` or ``IN`` matches no stored value exactly but
    matches one case-insensitively ('East Bohemia' vs 'east Bohemia').

    Fires: ``WHERE country = 'france'`` when 'France' is stored. Does not fire: ``WHERE country = 'France'``.
    """
    mismatched = [(text, stored) for text, stored in _unmatched_literals(ctx) if stored is not None]
    return shorten(f"{mismatched[0][0]}; stored as {mismatched[0][1]!r}") if mismatched else None


@check("G15", "literal-absent", "execution")
def absent_literal(ctx: AuditContext) -> str | None:
    """A string literal compared with ``=``, ``!=`` or ``IN`` matches no stored value, not even
    case-insensitively (a typo, or the wrong column).

    Fires: ``WHERE country = 'Atlantis'``. Does not fire: ``WHERE country = 'Spain'``.
    """
    absent = [text for text, stored in _unmatched_literals(ctx) if stored is None]
    return shorten(absent[0]) if absent else None


@check("G18", "duplicate-rows", "execution")
def duplicate_rows(ctx: AuditContext) -> str | None:
    """The gold's result repeats rows: set-based and bag-based comparators disagree on it, and a
    prediction differing only by DISTINCT is judged differently by different benchmarks.

    Fires: ``SELECT country FROM singer``. Does not fire: ``SELECT DISTINCT country FROM singer``.
    """
    if not ctx.gold_ok:
        return None
    counts = Counter(ctx.gold.rows)
    repeated = [(row, n) for row, n in counts.items() if n > 1]
    if not repeated:
        return None
    row, n = repeated[0]
    return shorten(f"{len(ctx.gold.rows) - len(counts)} repeated row(s), e.g. {row!r} x{n}")


@check("G20", "float-result", "execution")
def float_result(ctx: AuditContext) -> str | None:
    """The result holds non-integral floats (AVG, ratios): exact comparators are brittle on them.

    Fires: ``SELECT avg(net_worth) FROM singer``. Does not fire: ``SELECT max(age) FROM singer``.
    """
    if not ctx.gold_ok:
        return None
    for row in ctx.gold.rows:
        for value in row:
            if isinstance(value, float) and not value.is_integer():
                return f"non-integral float {value!r}"
    return None


@check("G22", "huge-result", "execution")
def huge_result(ctx: AuditContext) -> str | None:
    """More than 10,000 rows, or more than the executor's caps: slow to compare and rarely what a
    question asks for.

    Fires: a cross join of two large tables. Does not fire: ``SELECT name FROM singer``.
    """
    if ctx.db_available and ctx.gold.ok and ctx.gold.truncated:
        return f"result exceeds the executor's caps ({ctx.limits.max_rows} rows)"
    if ctx.gold_ok and len(ctx.gold.rows) > HUGE_ROWS:
        return f"{len(ctx.gold.rows)} rows"
    return None


@check("G23", "duplicate-columns", "execution")
def duplicate_columns(ctx: AuditContext) -> str | None:
    """Two result columns are equal on every row: comparators that match columns by value cannot
    tell which is which.

    Fires: ``SELECT name, name FROM singer`` (two rows or more). Does not fire: ``SELECT name, country FROM singer``.
    """
    if not ctx.gold_ok or len(ctx.gold.rows) < 2:  # one row: equal cells are often a coincidence
        return None
    columns = list(zip(*ctx.gold.rows, strict=True))
    for i in range(len(columns)):
        for j in range(i + 1, len(columns)):
            if columns[i] == columns[j]:
                names = ctx.gold.columns
                return f"columns {i + 1} ({names[i]}) and {j + 1} ({names[j]}) are identical"
    return None


#: This family's checks, listed (:mod:`progress_sql.audit.catalogue` gathers the families).
CHECKS: tuple[Check, ...] = (
    execution_error,
    timeout,
    empty_result,
    null_only,
    degenerate,
    null_first_sort,
    text_number,
    case_mismatched_literal,
    absent_literal,
    duplicate_rows,
    float_result,
    huge_result,
    duplicate_columns,
)
