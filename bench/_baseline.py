"""The EX-only baseline the benchmarks compare against: what the first ``eval`` command did (gold
results through the cache, predictions through the pool, one verdict each), without votes, hardness,
ODT analysis or test suites."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from progress_sql.execution.jobs import ExecJob
from progress_sql.judge.compare import judge
from progress_sql.judge.gold import GoldStore
from progress_sql.types import Example, Verdict


def score(examples: Sequence[Example], predictions: Sequence[str], store: GoldStore) -> list[Verdict | None]:
    """The verdict of ``predictions[i]`` against ``examples[i]`` for every i (None: database absent)."""
    if len(examples) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(examples)} examples")
    pairs = [(e, p) for e, p in zip(examples, predictions, strict=True) if Path(e.db_path).is_file()]
    golds = store.gold_results([e for e, _ in pairs])
    jobs = [ExecJob(e.db_path, store.preset.prepare_pred(p), store.limits) for e, p in pairs]
    preds = store.pool.run_many(jobs)
    verdicts = {
        e.index: judge(store.preset, e.gold_sql, gold, pred)
        for (e, _), gold, pred in zip(pairs, golds, preds, strict=True)
    }
    return [verdicts.get(e.index) for e in examples]
