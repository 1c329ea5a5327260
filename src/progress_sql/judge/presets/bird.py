"""``bird``: BIRD's official execution accuracy, ``set(pred_rows) == set(gold_rows)``.

Rows are compared as a set (order and duplicates ignored), columns by position, values exactly
(``1 == 1.0``). The SQL runs as written.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from progress_sql.judge.presets.base import Equality, RunsAsWritten
from progress_sql.types import ExecResult


@dataclass(frozen=True, slots=True)
class BirdPreset(RunsAsWritten):
    @property
    def name(self) -> str:
        return "bird"

    def equal(self, gold_sql: str, gold: Sequence[ExecResult], pred: ExecResult) -> Equality:
        if set(pred.rows) == set(gold[0].rows):
            return Equality(True, "same set of rows")
        return Equality(False, "different set of rows")

    def vote_key(self, gold_sql: str, result: ExecResult) -> Hashable | None:
        # Python's equality and hashing agree (1 == 1.0, same hash), so the set itself is canonical.
        return frozenset(result.rows)
