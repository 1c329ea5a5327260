"""``spider``: the official Spider / test-suite evaluator's execution comparison, as it runs (text
rewrites included); the behaviour table:
docs/semantics.md#spider-the-official-spider--test-suite-evaluator-as-it-runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations, product
from math import factorial, prod
from typing import Any

from progress_sql.judge.presets.base import Equality, shape_difference
from progress_sql.judge.presets.columns import assignments
from progress_sql.judge.sqltext import (
    first_statement,
    fix_spaced_operators,
    replace_current_year,
    strip_distinct,
)
from progress_sql.types import ExecResult, Row, SQLValue

#: Stop searching column permutations after this many candidates (upstream would hang).
MAX_PERMUTATIONS = 100_000
#: A vote key tries at most this many orders of interchangeable columns (else: no key).
MAX_KEY_PERMUTATIONS = 720


@dataclass(frozen=True, slots=True)
class SpiderPreset:
    keep_distinct: bool = False
    value_replacement: bool = False

    @property
    def name(self) -> str:
        return "spider"

    def _rewrite(self, sql: str) -> str:
        return _rewrite(sql, self.keep_distinct)

    def gold_queries(self, gold_sql: str) -> tuple[str, ...]:
        return (replace_current_year(self._rewrite(gold_sql)),)

    def prepare_pred(self, pred_sql: str) -> str:
        if self.value_replacement:
            pred_sql = pred_sql.replace(" value ", " 1 ")
        return replace_current_year(self._rewrite(pred_sql))

    def order_matters(self, gold_sql: str) -> bool:
        # Upstream's test: a plain substring of the rewritten gold text, sub-queries included.
        return "order by" in self._rewrite(gold_sql).lower()

    def equal(self, gold_sql: str, gold: Sequence[ExecResult], pred: ExecResult) -> Equality:
        ordered = self.order_matters(gold_sql)
        return result_eq(list(gold[0].rows), list(pred.rows), ordered)

    def vote_key(self, gold_sql: str, result: ExecResult) -> Hashable | None:
        return canonical_rows(list(result.rows), self.order_matters(gold_sql))


def _value_key(value: SQLValue) -> tuple[int, Any]:
    # A total order consistent with Python equality (1 and 1.0 sort together).
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, value)


def canonical_rows(rows: list[Row], ordered: bool) -> Hashable | None:
    """The representative of ``rows`` under :func:`result_eq`: two results get the same key exactly
    when one column permutation makes them equal (as a bag, or as a sequence when ``ordered``).

    Columns are put in the order of their value signatures; among columns with equal signatures the
    smallest arrangement of the rows wins. None when more than :data:`MAX_KEY_PERMUTATIONS`
    arrangements would have to be tried.

    >>> canonical_rows([(1, "a"), (2, "b")], False) == canonical_rows([("b", 2), ("a", 1.0)], False)
    True
    >>> canonical_rows([(1,), (2,)], True) == canonical_rows([(2,), (1,)], True)
    False
    """
    if not rows:
        return ("empty",)
    width = len(rows[0])

    def signature(i: int) -> tuple[tuple[int, Any], ...]:
        column = [_value_key(row[i]) for row in rows]
        return tuple(column if ordered else sorted(column))

    signatures = [signature(i) for i in range(width)]
    columns = sorted(range(width), key=lambda i: signatures[i])
    blocks: list[list[int]] = []
    for i in columns:
        if blocks and signatures[blocks[-1][0]] == signatures[i]:
            blocks[-1].append(i)
        else:
            blocks.append([i])
    if prod(factorial(len(block)) for block in blocks) > MAX_KEY_PERMUTATIONS:
        return None
    best: tuple[tuple[tuple[int, Any], ...], ...] | None = None
    for choice in product(*(permutations(block) for block in blocks)):
        order = [i for block in choice for i in block]
        arranged = [tuple(_value_key(row[i]) for i in order) for row in rows]
        candidate = tuple(arranged if ordered else sorted(arranged))
        if best is None or candidate < best:
            best = candidate
    return ("ordered" if ordered else "bag", width, best)


@lru_cache(maxsize=65_536)
def _rewrite(sql: str, keep_distinct: bool) -> str:
    # Cached: golds are rewritten once per scoring pass, and tokenizing is the costly part.
    sql = fix_spaced_operators(sql)
    if not keep_distinct:
        sql = strip_distinct(first_statement(sql))
    return sql


def _unorder_row(row: Row) -> Row:
    return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))


def result_eq(gold: list[Row], pred: list[Row], ordered: bool) -> Equality:
    """Upstream's ``result_eq`` (gold first), with a deterministic permutation search."""
    difference = shape_difference(gold, pred)
    if difference is not None:
        return difference
    width = len(gold[0])
    gold_unordered = [_unorder_row(r) for r in gold]
    pred_unordered = [_unorder_row(r) for r in pred]
    if ordered and gold_unordered != pred_unordered:
        return Equality(False, "rows differ (ordered)")
    if not ordered and set(gold_unordered) != set(pred_unordered):
        return Equality(False, "rows differ")
    candidates = _column_candidates(gold, pred, width, ordered)
    gold_bag = None if ordered else Counter(gold)
    for tried, permutation in enumerate(assignments(candidates), start=1):
        if tried > MAX_PERMUTATIONS:
            return Equality(False, f"column permutation search stopped after {MAX_PERMUTATIONS}")
        permuted = pred if width == 1 else [tuple(row[j] for j in permutation) for row in pred]
        if ordered and permuted == gold:
            return Equality(True, "same rows in the same order")
        if not ordered and Counter(permuted) == gold_bag:
            return Equality(True, "same bag of rows")
    return Equality(False, "no column permutation makes the rows equal")


def _column_candidates(gold: list[Row], pred: list[Row], width: int, ordered: bool) -> list[list[int]]:
    # A valid permutation maps gold column i to a predicted column with the same values (as a
    # sequence when ordered, as a bag otherwise): a necessary condition, so pruning with it is sound.
    def signature(rows: list[Row], i: int) -> Counter[SQLValue] | list[SQLValue]:
        column = [row[i] for row in rows]
        return column if ordered else Counter(column)

    gold_signatures = [signature(gold, i) for i in range(width)]
    pred_signatures = [signature(pred, j) for j in range(width)]
    return [[j for j in range(width) if pred_signatures[j] == gold_signatures[i]] for i in range(width)]
