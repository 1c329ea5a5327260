"""``spider2``: Spider 2.0's column-vector containment; the behaviour table:
docs/semantics.md#spider2-spider-20-column-vector-containment."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from progress_sql.judge.presets.base import Equality, RunsAsWritten
from progress_sql.judge.sqltext import has_word_sequence
from progress_sql.types import ExecResult, SQLValue


@dataclass(frozen=True, slots=True)
class Spider2Preset(RunsAsWritten):
    tolerance: float = 0.01
    ignore_order: bool | None = None

    @property
    def name(self) -> str:
        return "spider2"

    def vote_key(self, gold_sql: str, result: ExecResult) -> Hashable | None:
        return None  # containment with a tolerance is neither symmetric nor transitive: vote with ``equal``

    def equal(self, gold_sql: str, gold: Sequence[ExecResult], pred: ExecResult) -> Equality:
        ignore = self.ignore_order
        if ignore is None:
            ignore = not has_word_sequence(gold_sql, ("order", "by"))
        pred_vectors = _vectors(pred, ignore)
        for index, vector in enumerate(_vectors(gold[0], ignore)):
            if not any(self._vectors_match(vector, candidate) for candidate in pred_vectors):
                return Equality(False, f"gold column {index + 1} matches no predicted column")
        return Equality(True, "every gold column matches a predicted column")

    def _vectors_match(self, a: list[SQLValue], b: list[SQLValue]) -> bool:
        return len(a) == len(b) and all(self._values_match(x, y) for x, y in zip(a, b, strict=True))

    def _values_match(self, x: SQLValue, y: SQLValue) -> bool:
        if _is_number(x) and _is_number(y):
            return math.isclose(x, y, rel_tol=0.0, abs_tol=self.tolerance)  # type: ignore[arg-type]
        return x == y


def _is_number(value: SQLValue) -> bool:
    return isinstance(value, (int, float))


def _vectors(result: ExecResult, ignore_order: bool) -> list[list[SQLValue]]:
    width = len(result.columns) if result.columns else (len(result.rows[0]) if result.rows else 0)
    vectors: list[list[SQLValue]] = [[0 if row[i] is None else row[i] for row in result.rows] for i in range(width)]
    if ignore_order:
        vectors = [sorted(v, key=str) for v in vectors]
    return vectors
