"""Execution accuracy: run gold (cached) and predicted SQL, judge each pair under a preset.

Pure orchestration over the pool and the cache; files and the terminal are the command line's job.
Examples whose database file is absent are ``skipped``; a gold that fails, times out or is truncated
makes its example ``gold_invalid`` (never a match).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from progress_sql.execution.cache import GoldCache, cache_key
from progress_sql.execution.compare import Preset, describe, judge
from progress_sql.execution.executor import DEFAULT_LIMITS, ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.worker import ExecJob
from progress_sql.types import Example, ExecResult, VerdictStatus

SampleVerdict = Literal[VerdictStatus, "skipped"]
Progress = Callable[[int], None]  # advance by n finished executions


@dataclass(frozen=True, slots=True)
class SampleRecord:
    """One example's outcome, as written to samples.jsonl."""

    index: int
    db_id: str
    difficulty: str | None
    verdict: SampleVerdict
    match: bool
    reason: str
    preset: str
    pred_status: str | None = None
    gold_status: str | None = None
    pred_elapsed_s: float | None = None


def score(
    examples: Sequence[Example],
    predictions: Sequence[str],
    preset: Preset,
    pool: ExecutionPool,
    *,
    limits: ExecLimits = DEFAULT_LIMITS,
    cache: GoldCache | None = None,
    progress: Progress | None = None,
) -> list[SampleRecord]:
    """Judge ``predictions[i]`` against ``examples[i]`` for every i, in order."""
    if len(examples) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(examples)} examples")
    cache = cache if cache is not None else GoldCache()
    prediction_of = {e.index: p for e, p in zip(examples, predictions, strict=True)}
    present = [e for e in examples if Path(e.db_path).is_file()]
    gold = gold_results(present, preset, pool, limits=limits, cache=cache, progress=progress)
    pred_jobs = [ExecJob(e.db_path, preset.prepare_pred(prediction_of[e.index]), limits) for e in present]
    pred_results = pool.run_many(pred_jobs, on_result=(lambda _i, _r: progress(1)) if progress else None)
    by_index: dict[int, SampleRecord] = {}
    for example, golds, pred in zip(present, gold, pred_results, strict=True):
        verdict = judge(preset, example.gold_sql, golds, pred)
        by_index[example.index] = SampleRecord(
            index=example.index,
            db_id=example.db_id,
            difficulty=example.difficulty,
            verdict=verdict.status,
            match=verdict.match,
            reason=verdict.reason,
            preset=preset.name,
            pred_status=pred.status,
            gold_status=golds[0].status,
            pred_elapsed_s=round(pred.elapsed_s, 6),
        )
    return [
        by_index.get(e.index)
        or SampleRecord(
            e.index, e.db_id, e.difficulty, "skipped", False, f"database not found: {e.db_path}", preset.name
        )
        for e in examples
    ]


def gold_results(
    examples: Sequence[Example],
    preset: Preset,
    pool: ExecutionPool,
    *,
    limits: ExecLimits = DEFAULT_LIMITS,
    cache: GoldCache,
    progress: Progress | None = None,
) -> list[tuple[ExecResult, ...]]:
    """The gold results of each example under ``preset`` (all its gold queries), running each distinct
    (database content, SQL) once and serving repeats from ``cache``."""
    described = describe(preset)
    keyed: list[list[tuple[str, str, str]]] = []  # per example: (key, db_path, sql)
    for example in examples:
        keyed.append(
            [
                (cache_key(example.db_path, sql, described, limits), example.db_path, sql)
                for sql in preset.gold_queries(example.gold_sql)
            ]
        )
    found: dict[str, ExecResult] = {}
    missing: dict[str, ExecJob] = {}
    for entries in keyed:
        for key, db_path, sql in entries:
            if key in found or key in missing:
                continue
            hit = cache.get(key)
            if hit is None:
                missing[key] = ExecJob(db_path, sql, limits)
            else:
                found[key] = hit
    keys = list(missing)
    ran = pool.run_many([missing[k] for k in keys], on_result=(lambda _i, _r: progress(1)) if progress else None)
    for key, result in zip(keys, ran, strict=True):
        cache.put(key, result)
        found[key] = result
    return [tuple(found[key] for key, _, _ in entries) for entries in keyed]


def summarize(records: Sequence[SampleRecord]) -> dict[str, Any]:
    """Counts and execution accuracy (EX), overall and per difficulty.

    ``execution_accuracy`` divides matches by the examples that could be scored (database present,
    gold valid); ``execution_accuracy_with_invalid`` also counts invalid golds as misses.
    """

    def block(items: Sequence[SampleRecord]) -> dict[str, Any]:
        skipped = sum(r.verdict == "skipped" for r in items)
        invalid = sum(r.verdict == "gold_invalid" for r in items)
        matched = sum(r.match for r in items)
        scored = len(items) - skipped - invalid
        counts: dict[str, int] = {}
        for record in items:
            counts[record.verdict] = counts.get(record.verdict, 0) + 1
        return {
            "examples": len(items),
            "skipped": skipped,
            "gold_invalid": invalid,
            "scored": scored,
            "matched": matched,
            "execution_accuracy": matched / scored if scored else None,
            "execution_accuracy_with_invalid": matched / (scored + invalid) if scored + invalid else None,
            "verdicts": dict(sorted(counts.items())),
        }

    summary = block(records)
    levels = sorted({r.difficulty for r in records if r.difficulty})
    if levels:
        summary["by_difficulty"] = {level: block([r for r in records if r.difficulty == level]) for level in levels}
    return summary
