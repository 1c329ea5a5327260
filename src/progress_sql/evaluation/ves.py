"""R-VES timing (BIRD's repeated-timing protocol) for the records of a finished evaluation.

BIRD's ``evaluation_ves.py`` times a correct answer ``iterate_num`` times (100 by default): each
repeat runs the prediction, then the gold, and keeps gold time / predicted time. Here each repeat is
one pair of jobs on the store's execution pool (the worker's own clock around execute and fetch, on
a connection it keeps open); the mean ratio without outliers picks the reward
(:mod:`progress_sql.evaluation.bird`). Timings depend on the machine and what else runs on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from progress_sql.evaluation.bird import time_ratio, ves_reward
from progress_sql.evaluation.harness import EvalRecord
from progress_sql.judge.gold import GoldStore
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class Timing:
    """One correct answer's repeated timings (seconds), prediction and gold in turn; ``failed`` when
    a repeat errored or timed out (BIRD's reward is then 0)."""

    pred_s: tuple[float, ...]
    gold_s: tuple[float, ...]
    failed: bool = False

    def ratios(self) -> list[float]:
        return [gold / max(pred, 1e-9) for pred, gold in zip(self.pred_s, self.gold_s, strict=True)]


def ves_of(timing: Timing | None) -> tuple[float, float]:
    """(reward, mean time ratio) of an answer: (0, 0) when it was not timed (wrong) or failed."""
    if timing is None or timing.failed:
        return 0.0, 0.0
    ratio = time_ratio(timing.ratios())
    return ves_reward(ratio), ratio


def time_answers(
    examples: Sequence[Example],
    records: Sequence[EvalRecord],
    store: GoldStore,
    repeats: int,
    progress: Callable[[int], None] | None = None,
) -> list[Timing | None]:
    """The timings of every correct answer (None for the others), ``repeats`` pairs each."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    timed = [i for i, r in enumerate(records) if r.status == "scored" and r.match and r.sql is not None]
    jobs = []
    for i in timed:
        jobs += [store.answer_job(examples[i], records[i].sql or ""), store.gold_job(examples[i])] * repeats
    tick = (lambda _i, _r: progress(1)) if progress else None
    results = store.pool.run_many(jobs, on_result=tick) if jobs else []
    timings: list[Timing | None] = [None] * len(records)
    for k, i in enumerate(timed):
        runs = results[2 * repeats * k : 2 * repeats * (k + 1)]
        timings[i] = Timing(
            tuple(run.elapsed_s for run in runs[::2]),
            tuple(run.elapsed_s for run in runs[1::2]),
            failed=any(run.status != "ok" for run in runs),
        )
    return timings


def measure_ves(
    examples: Sequence[Example],
    records: Sequence[EvalRecord],
    store: GoldStore,
    repeats: int,
    progress: Callable[[int], None] | None = None,
) -> list[EvalRecord]:
    """``records`` (from :func:`~progress_sql.evaluation.harness.evaluate`, same order as
    ``examples``) with ``ves_reward`` and ``ves_ratio`` set (skipped examples keep None)."""
    timings = time_answers(examples, records, store, repeats, progress)
    out = []
    for record, timing in zip(records, timings, strict=True):
        if record.status == "skipped":
            out.append(record)
            continue
        reward, ratio = ves_of(timing)
        out.append(replace(record, ves_reward=reward, ves_ratio=round(ratio, 6)))
    return out
