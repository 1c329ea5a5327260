"""R-VES timing (BIRD's repeated-timing protocol) for the records of a finished evaluation.

BIRD's ``evaluation_ves.py`` times a correct answer ``iterate_num`` times (100 by default): each
repeat runs the prediction, then the gold, and keeps gold time / predicted time. Here each repeat is
one pair of jobs on the store's execution pool (the worker's own clock around execute and fetch, on
a connection it keeps open); the mean ratio without outliers picks the reward
(:mod:`progress_sql.evaluation.bird`). Timings depend on the machine and what else runs on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from progress_sql.evaluation.bird import time_ratio, ves_reward
from progress_sql.evaluation.harness import EvalRecord
from progress_sql.execution.gold import GoldStore
from progress_sql.execution.worker import ExecJob
from progress_sql.types import Example


def measure_ves(
    examples: Sequence[Example],
    records: Sequence[EvalRecord],
    store: GoldStore,
    repeats: int,
    progress: Callable[[int], None] | None = None,
) -> list[EvalRecord]:
    """``records`` (from :func:`~progress_sql.evaluation.harness.evaluate`, same order as
    ``examples``) with ``ves_reward`` and ``ves_ratio`` set: 0 for a wrong or unscored answer, else
    the reward of the timed ratio. A repeat that fails or times out makes the reward 0 (BIRD's
    timeout does too)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    timed = [i for i, r in enumerate(records) if r.status == "scored" and r.match and r.sql is not None]
    jobs = []
    for i in timed:
        pred = ExecJob(examples[i].db_path, store.preset.prepare_pred(records[i].sql or ""), store.limits)
        gold = ExecJob(examples[i].db_path, examples[i].gold_sql, store.limits)
        jobs += [pred, gold] * repeats
    tick = (lambda _i, _r: progress(1)) if progress else None
    results = store.pool.run_many(jobs, on_result=tick) if jobs else []
    out = [replace(r, ves_reward=0.0, ves_ratio=0.0) if r.status != "skipped" else r for r in records]
    for k, i in enumerate(timed):
        runs = results[2 * repeats * k : 2 * repeats * (k + 1)]
        if any(run.status != "ok" for run in runs):
            continue
        ratios = [gold.elapsed_s / max(pred.elapsed_s, 1e-9) for pred, gold in zip(runs[::2], runs[1::2], strict=True)]
        ratio = time_ratio(ratios)
        out[i] = replace(out[i], ves_reward=ves_reward(ratio), ves_ratio=round(ratio, 6))
    return out
