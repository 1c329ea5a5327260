"""Execution accuracy: run gold (cached) and predicted SQL, judge each pair under a preset.

Pure orchestration over the pool and the cache; files and the terminal are the command line's job.
Examples whose database file is absent are ``skipped``; a gold that fails, times out or is truncated
makes its example ``gold_invalid`` (never a match).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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


# --- the evaluation harness: samples, votes, test suites, hardness, ODT tags ---------------------

RecordStatus = Literal["scored", "skipped", "gold_invalid"]
Breakdown = Literal["hardness", "difficulty"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One generated answer: its SQL (None when none could be extracted) and, for model text, the
    raw response and whether it followed the output format (None for prediction files)."""

    sql: str | None
    text: str | None = None
    format_ok: bool | None = None


@dataclass(frozen=True, slots=True)
class EvalRecord:
    """One example's evaluation, as written to samples.jsonl.

    ``sql`` / ``verdict`` / ``match`` belong to the answer: the only sample, or the majority vote's
    choice. ``ts_match`` is None without a suite for the example's database. ``votes`` are the sizes
    of the result groups in order of first appearance; ``vote_share`` the winner's share.
    """

    index: int
    db_id: str
    status: RecordStatus
    reason: str
    difficulty: str | None
    hardness: str | None
    level: str | None
    sql: str | None
    verdict: str
    match: bool
    ts_match: bool | None = None
    ts_databases: int = 0
    samples: int = 0
    correct_samples: int = 0
    valid_samples: int = 0
    format_ok_samples: int | None = None
    first_match: bool = False
    chosen_sample: int | None = None
    votes: tuple[int, ...] = ()
    vote_share: float = 0.0
    tags: tuple[str, ...] = ()
    f_struct: float | None = None
    preset: str = ""


def suite_databases(suite: Path | None, db_id: str, gold_sql: str | None = None) -> list[str]:
    """The test-suite databases of ``db_id``: ``suite/<db_id>/*.sqlite``, sorted; when the suite's
    manifest (``progress-sql build-suite``) lists ``gold_sql``, only the files it assigns to that
    gold (those on which it runs and does not depend on scan order), in the manifest's order."""
    if suite is None:
        return []
    if gold_sql is not None:
        from progress_sql.testsuite.manifest import gold_databases

        assigned = gold_databases(suite, db_id, gold_sql)
        if assigned is not None:
            return [str(suite / db_id / name) for name in assigned if (suite / db_id / name).is_file()]
    return [str(p) for p in sorted((suite / db_id).glob("*.sqlite"))]


def suite_match(
    example: Example,
    pred_sql: str,
    preset: Preset,
    pool: ExecutionPool,
    *,
    suite: Path,
    limits: ExecLimits = DEFAULT_LIMITS,
    cache: GoldCache | None = None,
) -> tuple[bool, int]:
    """Whether a prediction (already prepared by ``preset``) that matches on the original database
    also matches on every suite database of its gold, and on how many it was judged. Databases run
    one at a time and the first disagreement ends the check; a suite database on which the gold
    fails is left out, as in :func:`evaluate`."""
    cache = cache if cache is not None else GoldCache()
    judged = 0
    for db in suite_databases(suite, example.db_id, example.gold_sql):
        gold = gold_results([replace(example, db_path=db)], preset, pool, limits=limits, cache=cache)[0]
        verdict = judge(preset, example.gold_sql, gold, pool.run(ExecJob(db, pred_sql, limits)))
        if verdict.status == "gold_invalid":
            continue
        judged += 1
        if not verdict.match:
            return False, judged
    return True, judged


def evaluate(
    examples: Sequence[Example],
    samples: Sequence[Sequence[Sample]],
    preset: Preset,
    pool: ExecutionPool,
    *,
    limits: ExecLimits = DEFAULT_LIMITS,
    cache: GoldCache | None = None,
    suite: Path | None = None,
    breakdown: Breakdown = "hardness",
    progress: Progress | None = None,
) -> list[EvalRecord]:
    """Evaluate ``samples[i]`` (one or more answers) against ``examples[i]`` for every i, in order.

    Every distinct (database, SQL) runs once. With several samples the answer is the majority vote
    by execution result (:func:`progress_sql.evaluation.voting.majority_vote`). With ``suite`` an
    answer that matches on the original database is also run on every suite database of its
    ``db_id``; it counts for test-suite accuracy only if it matches on all of them (a suite database
    on which the gold fails is left out for that example).
    """
    from progress_sql.evaluation.hardness import hardness
    from progress_sql.evaluation.voting import is_valid, majority_vote
    from progress_sql.odt import diagnose, prepare_gold

    if len(examples) != len(samples):
        raise ValueError(f"{len(samples)} sample lists for {len(examples)} examples")
    cache = cache if cache is not None else GoldCache()
    tick = (lambda _i, _r: progress(1)) if progress else None
    present = [(e, s) for e, s in zip(examples, samples, strict=True) if Path(e.db_path).is_file()]
    golds = gold_results([e for e, _ in present], preset, pool, limits=limits, cache=cache, progress=progress)

    def run_unique(pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], ExecResult]:
        unique = list(dict.fromkeys(pairs))
        ran = pool.run_many([ExecJob(db, sql, limits) for db, sql in unique], on_result=tick)
        return dict(zip(unique, ran, strict=True))

    prepared = [[None if s.sql is None else preset.prepare_pred(s.sql) for s in items] for _, items in present]
    results = run_unique(
        [(e.db_path, sql) for (e, _), sqls in zip(present, prepared, strict=True) for sql in sqls if sql is not None]
    )

    records: dict[int, EvalRecord] = {}
    pending_ts: list[tuple[Example, str, str]] = []  # (example, chosen prepared SQL, suite db)
    for (example, items), gold, sqls in zip(present, golds, prepared, strict=True):
        level_hardness = hardness(example.gold_sql)
        level = level_hardness if breakdown == "hardness" else example.difficulty
        base = EvalRecord(
            index=example.index, db_id=example.db_id, status="scored", reason="", difficulty=example.difficulty,
            hardness=level_hardness, level=level, sql=None, verdict="", match=False, samples=len(items),
            preset=preset.name,
        )  # fmt: skip
        if not items:
            raise ValueError(f"example {example.index} has no samples")
        sample_results = [None if sql is None else results[(example.db_path, sql)] for sql in sqls]
        formats = [s.format_ok for s in items]
        format_count = None if any(f is None for f in formats) else sum(bool(f) for f in formats)
        if gold[0].status != "ok" or gold[0].truncated:
            reason = judge(preset, example.gold_sql, gold, ExecResult("error")).reason
            records[example.index] = replace(
                base, status="gold_invalid", reason=reason, sql=items[0].sql, verdict="gold_invalid",
                format_ok_samples=format_count,
            )  # fmt: skip
            continue
        verdicts = [None if r is None else judge(preset, example.gold_sql, gold, r) for r in sample_results]
        vote = majority_vote(example.gold_sql, sample_results, preset)
        chosen = vote.chosen if vote.chosen is not None else 0
        chosen_verdict = verdicts[chosen]
        correct = sum(bool(v and v.match) for v in verdicts)
        gold_reference = prepare_gold(example.gold_sql)
        diagnosis = diagnose(items[chosen].sql or "", gold_reference)
        record = replace(
            base,
            reason=chosen_verdict.reason if chosen_verdict else "no SQL found in the response",
            sql=items[chosen].sql,
            verdict=chosen_verdict.status if chosen_verdict else "no_sql",
            match=bool(chosen_verdict and chosen_verdict.match),
            correct_samples=correct,
            valid_samples=sum(is_valid(r) for r in sample_results),
            format_ok_samples=format_count,
            first_match=bool(verdicts[0] and verdicts[0].match),
            chosen_sample=vote.chosen,
            votes=vote.sizes,
            vote_share=vote.share,
            tags=diagnosis.tags,
            f_struct=round(diagnosis.f_struct, 6),
        )
        records[example.index] = record
        databases = suite_databases(suite, example.db_id, example.gold_sql)
        # A database folder in the suite with no file for this gold: the suite is the original alone.
        if databases or (suite is not None and (suite / example.db_id).is_dir()):
            if record.match and databases:
                chosen_sql = sqls[chosen]
                assert chosen_sql is not None
                pending_ts.extend((example, chosen_sql, db) for db in databases)
            else:
                records[example.index] = replace(record, ts_match=record.match, ts_databases=len(databases))
    _judge_suites(pending_ts, records, preset, pool, limits, cache, run_unique, progress)
    return [
        records.get(e.index)
        or EvalRecord(
            index=e.index,
            db_id=e.db_id,
            status="skipped",
            reason=f"database not found: {e.db_path}",
            difficulty=e.difficulty,
            hardness=hardness(e.gold_sql),
            level=hardness(e.gold_sql) if breakdown == "hardness" else e.difficulty,
            sql=None,
            verdict="skipped",
            match=False,
            preset=preset.name,
        )
        for e in examples
    ]


def _judge_suites(
    pending: Sequence[tuple[Example, str, str]],
    records: dict[int, EvalRecord],
    preset: Preset,
    pool: ExecutionPool,
    limits: ExecLimits,
    cache: GoldCache,
    run_unique: Callable[[Sequence[tuple[str, str]]], dict[tuple[str, str], ExecResult]],
    progress: Progress | None,
) -> None:
    if not pending:
        return
    moved = [replace(example, db_path=db) for example, _, db in pending]
    golds = gold_results(moved, preset, pool, limits=limits, cache=cache, progress=progress)
    preds = run_unique([(db, sql) for _, sql, db in pending])
    outcome: dict[int, list[bool]] = {}
    for (example, sql, db), gold in zip(pending, golds, strict=True):
        verdict = judge(preset, example.gold_sql, gold, preds[(db, sql)])
        if verdict.status == "gold_invalid":
            continue  # the gold fails on this suite database: it says nothing about the prediction
        outcome.setdefault(example.index, []).append(verdict.match)
    for example, _, _ in pending:
        verdicts = outcome.get(example.index, [])
        record = records[example.index]
        if record.ts_match is None:
            records[example.index] = replace(record, ts_match=all(verdicts), ts_databases=len(verdicts))
