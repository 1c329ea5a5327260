"""What every comparison preset provides (``gold_queries`` / ``prepare_pred``: the SQL that runs;
``equal``; ``vote_key``), and :func:`judge`, which adds the rules no preset may bend
(docs/semantics.md#rules-shared-by-every-preset)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from progress_sql.types import ExecResult, Row, Verdict


@dataclass(frozen=True, slots=True)
class Equality:
    """The result of a preset's own comparison."""

    equal: bool
    reason: str


def shape_difference(gold: Sequence[Row], pred: Sequence[Row]) -> Equality | None:
    """The verdict when the two row lists are both empty or differ in row or column count; None
    when the rows themselves must be compared (then both are non-empty and equally wide)."""
    if not gold and not pred:
        return Equality(True, "both results empty")
    if len(gold) != len(pred):
        return Equality(False, f"row count differs (gold {len(gold)}, prediction {len(pred)})")
    if len(pred[0]) != len(gold[0]):
        return Equality(False, f"column count differs (gold {len(gold[0])}, prediction {len(pred[0])})")
    return None


class RunsAsWritten:
    """Base of the presets that run the gold and the prediction as written (no rewrite, no auxiliary query)."""

    __slots__ = ()

    def gold_queries(self, gold_sql: str) -> tuple[str, ...]:
        return (gold_sql,)

    def prepare_pred(self, pred_sql: str) -> str:
        return pred_sql


class Preset(Protocol):
    """A named comparison semantics; implementations are frozen dataclasses of their options."""

    @property
    def name(self) -> str: ...

    def gold_queries(self, gold_sql: str) -> tuple[str, ...]:
        """The SQL to run for the gold: the gold itself (possibly rewritten), then any auxiliary query."""
        ...

    def prepare_pred(self, pred_sql: str) -> str:
        """The SQL to run for a prediction."""
        ...

    def equal(self, gold_sql: str, gold: Sequence[ExecResult], pred: ExecResult) -> Equality:
        """Compare ok, untruncated results (``gold[0]`` answers ``gold_queries(gold_sql)[0]``)."""
        ...

    def vote_key(self, gold_sql: str, result: ExecResult) -> Hashable | None:
        """A canonical key of an ok, untruncated result for majority voting: two results share it
        exactly when :meth:`equal` calls them equal (``gold_sql`` decides order sensitivity). None
        when the preset's equality is not transitive (tolerances, containment) or the result is
        too ambiguous to canonicalize: voting then uses the first-representative rule."""
        ...


def describe(preset: Preset) -> dict[str, Any]:
    """The preset's name and options, as recorded in every result."""
    options: Mapping[str, Any] = asdict(preset)  # type: ignore[call-overload]
    return {"name": preset.name, "options": dict(options)}


def judge(preset: Preset, gold_sql: str, gold: Sequence[ExecResult], pred: ExecResult) -> Verdict:
    """Apply the shared rules, then the preset's own equality."""
    main = gold[0]
    if main.status != "ok":
        return Verdict(False, "gold_invalid", f"gold query {_failed(main)}", preset.name)
    if main.truncated:
        return Verdict(False, "gold_invalid", "gold result exceeds the row or byte cap", preset.name)
    if pred.status == "timeout":
        return Verdict(False, "pred_timeout", f"prediction {_failed(pred)}", preset.name)
    if pred.status != "ok":
        return Verdict(False, "pred_error", f"prediction {_failed(pred)}", preset.name)
    if pred.truncated:
        return Verdict(False, "pred_truncated", "prediction result exceeds the row or byte cap", preset.name)
    outcome = preset.equal(gold_sql, gold, pred)
    return Verdict(outcome.equal, "match" if outcome.equal else "mismatch", outcome.reason, preset.name)


def _failed(result: ExecResult) -> str:
    verb = "timed out" if result.status == "timeout" else "failed"
    return f"{verb}: {result.error}" if result.error else verb
