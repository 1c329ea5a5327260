"""Agreement with the official Spider test-suite evaluator and gold-as-prediction checks on the
shared benchmark data (skipped when ../shared/data is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.data.tasks import load_task
from progress_sql.evaluation.harness import EvalRecord, Sample, evaluate
from progress_sql.execution.executor import DEFAULT_LIMITS, ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import PRESETS, Preset, get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.types import Example
from tests.conftest import official_spider_verdicts

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

# The official run gave up after 20 s on a few predictions (its own timeout cannot fire). With a
# 5 s deadline, and draining capped results until the deadline, those come out as timeouts here;
# every prediction it did judge finishes well within 5 s.
LIMITS = ExecLimits(timeout_s=5.0, drain_after_cap=True)


def score(
    examples: list[Example],
    predictions: list[str],
    preset: Preset,
    pool: ExecutionPool,
    *,
    limits: ExecLimits = DEFAULT_LIMITS,
    cache: GoldCache | None = None,
) -> list[EvalRecord]:
    """Execution accuracy: one prediction per example, judged on the original database."""
    store = GoldStore(preset, pool=pool, limits=limits, cache=cache)
    return evaluate(examples, [[Sample(sql)] for sql in predictions], store)


@pytest.mark.parametrize("model", [1, 2, 3, 4, 5])
def test_spider_preset_agrees_with_the_official_evaluator(
    shared_data: Path,
    spider_dev: list[Example],
    pool: ExecutionPool,
    spider_gold_cache: GoldCache,
    model: int,
) -> None:
    predictions, official = official_spider_verdicts(shared_data, model, len(spider_dev))
    records = score(spider_dev, predictions, get_preset("spider"), pool, limits=LIMITS, cache=spider_gold_cache)
    judged = disagreements = 0
    for record, verdict in zip(records, official, strict=True):
        assert record.index == verdict["index"]
        expected = verdict.get("exec")
        if expected is None:  # the official run skipped it: database absent
            assert record.verdict == "skipped"
        elif expected == "timeout":
            assert not record.match
            assert record.verdict == "pred_timeout", (record.index, record.verdict, record.reason)
        else:
            judged += 1
            disagreements += int(record.match) != expected
    assert judged > 950
    assert disagreements == 0


@pytest.mark.parametrize(
    ("preset", "options"),
    [(name, {}) for name in sorted(PRESETS)] + [("spider", {"keep_distinct": True}), ("strict", {"tie_aware": False})],
)
def test_gold_as_prediction_is_perfect_on_spider_dev(
    spider_dev: list[Example], pool: ExecutionPool, preset: str, options: dict[str, bool]
) -> None:
    chosen = get_preset(preset, **options)
    records = score(spider_dev, [e.gold_sql for e in spider_dev], chosen, pool)
    scored = [r for r in records if r.verdict != "skipped"]
    assert len(scored) == 972
    assert [r.index for r in scored if not r.match] == []


def test_bird_gold_as_prediction_is_perfect_on_superhero(shared_data: Path, pool: ExecutionPool) -> None:
    examples = [e for e in load_task("bird-dev", shared_data / "bird") if e.db_id == "superhero"]
    assert len(examples) == 129
    records = score(examples, [e.gold_sql for e in examples], get_preset("bird"), pool)
    assert all(r.match for r in records)
