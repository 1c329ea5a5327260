"""Records shared by every layer: dataset examples, execution results and comparison verdicts.

They are frozen values: the executor, the comparators, the cache and the evaluation harness pass them
around without copying and without surprises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

#: A value SQLite hands back: NULL, INTEGER, REAL, TEXT or BLOB.
SQLValue: TypeAlias = int | float | str | bytes | None
Row: TypeAlias = tuple[SQLValue, ...]

ExecStatus = Literal["ok", "error", "timeout"]


@dataclass(frozen=True, slots=True)
class Example:
    """One benchmark question with its gold query and where its database lives."""

    index: int
    question: str
    db_id: str
    db_path: str
    gold_sql: str
    evidence: str = ""
    difficulty: str | None = None


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What running one SQL statement produced; model mistakes are a status, never an exception.

    ``truncated`` is True when the row or byte cap stopped fetching: ``rows`` then holds a prefix of
    the real result, and comparators never count such a result as a match.
    """

    status: ExecStatus
    columns: tuple[str, ...] = ()
    rows: tuple[Row, ...] = ()
    error: str | None = None
    elapsed_s: float = 0.0
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"


VerdictStatus = Literal[
    "match",
    "mismatch",
    "pred_error",
    "pred_timeout",
    "pred_truncated",
    "gold_invalid",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of comparing a prediction's result with the gold result under one preset.

    ``status == "gold_invalid"`` means the gold query failed, timed out or was truncated: the example
    is invalid and ``match`` is always False.
    """

    match: bool
    status: VerdictStatus
    reason: str
    preset: str
