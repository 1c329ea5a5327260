"""``strict``: our semantics for rewards (bag of rows, deterministic column matching, tolerant numbers,
tie-aware order); the behaviour table: docs/semantics.md#strict-our-semantics-for-rewards."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from progress_sql.judge.presets.base import Equality, RunsAsWritten, shape_difference
from progress_sql.judge.presets.columns import assignments
from progress_sql.sql.parse import ParseFailure, parse_sql
from progress_sql.types import ExecResult, Row, SQLValue

if TYPE_CHECKING:  # sqlglot is imported where a gold is parsed: an eval that never asks for strict skips it
    from sqlglot import exp

MAX_ASSIGNMENTS = 1_000
_KEY_ALIAS = "__progress_sql_order_key_{}"


@dataclass(frozen=True, slots=True)
class OrderInfo:
    """What the outermost gold query says about order: ORDER BY present, its key count, LIMIT."""

    ordered: bool
    extended_sql: str | None = None
    key_count: int = 0


@lru_cache(maxsize=4096)
def order_info(gold_sql: str) -> OrderInfo:
    """Parse the gold once to learn its outermost ORDER BY and build the extended query."""
    from sqlglot import exp

    tree = parse_sql(gold_sql)
    if isinstance(tree, ParseFailure):
        return OrderInfo(ordered=False)
    order = tree.args.get("order")
    if not order:
        return OrderInfo(ordered=False)
    if not isinstance(tree, exp.Select) or tree.args.get("offset") is not None:
        return OrderInfo(ordered=True)
    extended = _extended_select(tree, order)
    if extended is None:
        return OrderInfo(ordered=True)
    return OrderInfo(ordered=True, extended_sql=extended.sql(dialect="sqlite"), key_count=len(order.expressions))


def _extended_select(tree: exp.Select, order: exp.Order) -> exp.Select | None:
    from sqlglot import exp

    projections = list(tree.expressions)
    aliases = {p.alias.lower(): p.this for p in projections if isinstance(p, exp.Alias) and p.alias}
    keys: list[exp.Expression] = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and not key.is_string:
            try:
                position = int(key.this)
            except ValueError:
                return None
            if not 1 <= position <= len(projections):
                return None
            target = projections[position - 1]
            key = target.this if isinstance(target, exp.Alias) else target
            if isinstance(key, exp.Star):
                return None
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            key = aliases[key.name.lower()]
        keys.append(key)
    extended = tree.copy()
    extended.set("limit", None)
    extended.set(
        "expressions",
        [*extended.expressions, *(exp.alias_(k.copy(), _KEY_ALIAS.format(i)) for i, k in enumerate(keys))],
    )
    return extended


@dataclass(frozen=True, slots=True)
class StrictPreset(RunsAsWritten):
    rel_tol: float = 1e-6
    abs_tol: float = 1e-9
    tie_aware: bool = True

    @property
    def name(self) -> str:
        return "strict"

    def gold_queries(self, gold_sql: str) -> tuple[str, ...]:
        info = order_info(gold_sql)
        if self.tie_aware and info.extended_sql is not None:
            return (gold_sql, info.extended_sql)
        return (gold_sql,)

    def vote_key(self, gold_sql: str, result: ExecResult) -> Hashable | None:
        return None  # tolerance-based equality is not transitive: voting compares with ``equal``

    def equal(self, gold_sql: str, gold: Sequence[ExecResult], pred: ExecResult) -> Equality:
        info = order_info(gold_sql)
        gold_rows, pred_rows = list(gold[0].rows), list(pred.rows)
        difference = shape_difference(gold_rows, pred_rows)
        if difference is not None:
            return difference
        width = len(gold_rows[0])
        groups = None
        if info.ordered and len(gold) > 1:
            groups = self._tie_groups(gold_rows, gold[1], width, info.key_count)
        # The rows gold column i may draw from: the gold rows, or every member of the groups that
        # reach into the first len(gold) rows when ties are accepted.
        pool = gold_rows if groups is None else [row for group in groups for row in group]
        candidates = [
            [j for j in range(width) if self._sub_bag([r[j] for r in pred_rows], [r[i] for r in pool])]
            for i in range(width)
        ]
        for tried, assignment in enumerate(assignments(candidates)):
            if tried >= MAX_ASSIGNMENTS:
                return Equality(False, f"column matching stopped after {MAX_ASSIGNMENTS} assignments")
            permuted = [tuple(row[j] for j in assignment) for row in pred_rows]
            if not info.ordered:
                if self._bag_equal(permuted, gold_rows):
                    return Equality(True, "same bag of rows")
            elif groups is not None:
                if self._fits_groups(permuted, groups):
                    return Equality(True, "same rows in a valid order (ties accepted)")
            elif all(self._rows_equal(a, b) for a, b in zip(permuted, gold_rows, strict=True)):
                return Equality(True, "same rows in the same order")
        if not any(candidates[i] for i in range(width)) or not all(candidates):
            return Equality(False, "some gold column matches no predicted column")
        return Equality(False, "rows differ" if not info.ordered else "rows differ or are out of order")

    # --- ties -------------------------------------------------------------------------------

    def _tie_groups(
        self, gold_rows: list[Row], extended: ExecResult, width: int, key_count: int
    ) -> list[list[Row]] | None:
        """Groups of projected rows with equal ORDER BY keys, covering the first len(gold) rows;
        None when the extended run cannot be trusted (then plain order is used)."""
        if extended.status != "ok" or extended.truncated or not extended.rows:
            return None
        if len(extended.rows[0]) != width + key_count or len(extended.rows) < len(gold_rows):
            return None
        groups: list[list[Row]] = []
        last_key: Row | None = None
        for covered, row in enumerate(extended.rows):
            key = row[width:]
            if key != last_key:
                if covered >= len(gold_rows):
                    break
                groups.append([])
                last_key = key
            groups[-1].append(row[:width])
        # The gold's own result must fit its groups; if not, the rewrite changed the query's meaning.
        return groups if self._fits_groups(gold_rows, groups) else None

    def _fits_groups(self, rows: list[Row], groups: list[list[Row]]) -> bool:
        start = 0
        for group in groups:
            if start >= len(rows):
                return False
            segment = rows[start : start + len(group)]
            if len(segment) == len(group):
                if not self._bag_equal(segment, group):
                    return False
            elif not self._sub_bag_rows(segment, group):
                return False
            start += len(segment)
        return start == len(rows)

    # --- values --------------------------------------------------------------------------------

    def _values_equal(self, a: SQLValue, b: SQLValue) -> bool:
        if a is None or b is None:
            return a is None and b is None
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if isinstance(a, int) and isinstance(b, int):
                return a == b
            return math.isclose(a, b, rel_tol=self.rel_tol, abs_tol=self.abs_tol)
        return type(a) is type(b) and a == b

    def _rows_equal(self, a: Row, b: Row) -> bool:
        return all(self._values_equal(x, y) for x, y in zip(a, b, strict=True))

    def _bag_equal(self, a: list[Row], b: list[Row]) -> bool:
        if len(a) != len(b):
            return False
        return all(
            self._rows_equal(x, y) for x, y in zip(sorted(a, key=_row_key), sorted(b, key=_row_key), strict=True)
        )

    def _sub_bag_rows(self, part: list[Row], whole: list[Row]) -> bool:
        return _greedy_sub_bag(sorted(part, key=_row_key), sorted(whole, key=_row_key), self._rows_equal, _row_key)

    def _sub_bag(self, part: list[SQLValue], whole: list[SQLValue]) -> bool:
        if len(part) > len(whole):
            return False
        return _greedy_sub_bag(
            sorted(part, key=_value_key), sorted(whole, key=_value_key), self._values_equal, _value_key
        )


def _greedy_sub_bag(part: list[Any], whole: list[Any], equal: Any, key: Any) -> bool:
    """Whether sorted ``part`` is contained in sorted ``whole`` (two pointers)."""
    i = 0
    for item in part:
        while i < len(whole) and not equal(whole[i], item):
            if key(whole[i]) > key(item):
                return False
            i += 1
        if i == len(whole):
            return False
        i += 1
    return True


def _value_key(value: SQLValue) -> tuple[int, Any]:
    # Sort key that puts tolerance-equal numbers next to each other (6 significant digits).
    if value is None:
        return (0, 0)
    if isinstance(value, int):
        return (1, float(value))
    if isinstance(value, float):
        return (1, float(f"{value:.6g}"))
    if isinstance(value, str):
        return (2, value)
    return (3, value)


def _row_key(row: Row) -> tuple[tuple[int, Any], ...]:
    return tuple(_value_key(v) for v in row)
