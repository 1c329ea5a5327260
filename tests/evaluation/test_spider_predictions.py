"""The harness on the five published systems' Spider dev predictions: per-model EX equal to the
official evaluator's verdicts, per-hardness tables, ODT error rates and plots that hold data
(skipped when ../shared/data is absent)."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from progress_sql.evaluation.harness import EvalRecord, Sample, evaluate
from progress_sql.evaluation.metrics import summarize_eval
from progress_sql.evaluation.report import PLOTS, render_report, write_plots
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.types import Example
from tests.conftest import official_spider_verdicts
from tests.evaluation.test_plots import axes_hold_data

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

# As in tests/judge/test_agreement.py: the official run gave up after 20 s on a few predictions.
LIMITS = ExecLimits(timeout_s=5.0, drain_after_cap=True)
#: Official EX per model (matches of the 972 examples with a database), and its timeouts.
OFFICIAL = {1: (370, 0), 2: (305, 8), 3: (357, 1), 4: (308, 5), 5: (305, 4)}


@pytest.mark.parametrize("model", [1, 2, 3, 4, 5])
def test_five_systems(
    shared_data: Path,
    spider_dev: list[Example],
    pool: ExecutionPool,
    spider_gold_cache: GoldCache,
    tmp_path: Path,
    model: int,
) -> None:
    predictions, official = official_spider_verdicts(shared_data, model, len(spider_dev))
    store = GoldStore(get_preset("spider"), pool=pool, limits=LIMITS, cache=spider_gold_cache)
    records = evaluate(spider_dev, [[Sample(sql)] for sql in predictions], store)
    disagreements, timed_out = [], 0
    for record, verdict in zip(records, official, strict=True):
        assert record.index == verdict["index"]
        if "skipped" in verdict:
            assert record.status == "skipped"
            continue
        assert record.hardness == verdict["hardness"]
        if verdict["exec"] == "timeout":
            assert not record.match
            timed_out += record.verdict == "pred_timeout"
        elif int(record.match) != verdict["exec"]:
            disagreements.append(record.index)
    assert disagreements == []
    matched, timeouts = OFFICIAL[model]
    assert timed_out == timeouts
    metrics = summarize_eval(records)
    assert (metrics["scored"], metrics["matched"], metrics["skipped"]) == (972, matched, 62)
    assert metrics["skipped_examples"]["by_db_id"] == {"wta_1": 62}
    by_level = metrics["by_level"]
    assert list(by_level) == ["easy", "medium", "hard", "extra"]
    assert [by_level[level]["scored"] for level in by_level] == [232, 416, 160, 164]
    assert sum(block["matched"] for block in by_level.values()) == matched
    for level, block in by_level.items():
        expected = sum(v.get("exec") == 1 for v in official if v.get("hardness") == level and "skipped" not in v)
        assert block["matched"] == expected, level
    odt = metrics["odt"]
    assert odt["examples"] == 972
    assert all(0.0 < odt["rates"][c] < 1.0 for c in ("SELECT", "JOIN", "WHERE", "GROUP"))
    assert odt["average"] == pytest.approx(sum(odt["rates"].values()) / 4)
    assert sum(odt["tag_histogram"].values()) >= max(1, int(odt["any_tag_rate"] * 972))
    _check_report(tmp_path, records, metrics, model)


def _check_report(out: Path, records: list[EvalRecord], metrics: dict[str, Any], model: int) -> None:
    summary = {
        "settings": {
            "task": {"name": "spider-dev", "version": "1"},
            "source": f"model_{model}",
            "preset": {"name": "spider", "options": {}},
            "decoding": {"mode": "prediction file", "n": 1},
        },
        "versions": {"progress_sql": "test"},
        "odt_config_version": "test",
        "reward_config": {"version": "test"},
        "metrics": metrics,
        "notes": [],
    }
    paths = write_plots(out, summary, records)
    assert [p.name for p in paths] == [name for name, _ in PLOTS]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert axes_hold_data(path), path.name
    report = render_report(summary, [p.name for p in paths])
    assert "| extra | 164 |" in report
    assert "62 examples skipped, database file absent: `wta_1` (62)" in report


def test_workers_killed_from_outside_change_no_verdict(
    shared_data: Path, spider_dev: list[Example], spider_gold_cache: GoldCache
) -> None:
    """Two workers killed mid-run (as an OOM killer or an operator might): their queries are rerun on
    fresh workers, so every verdict is the official one and none reads 'worker process died'."""
    examples = spider_dev
    predictions, official = official_spider_verdicts(shared_data, 1, len(spider_dev))
    killed: list[int] = []
    with ExecutionPool(workers=2) as pool:
        store = GoldStore(get_preset("spider"), pool=pool, limits=LIMITS, cache=spider_gold_cache)
        stop = threading.Event()

        def kill_two_workers() -> None:
            while len(killed) < 2 and not stop.wait(0.05):
                pids = [pid for pid in pool.worker_pids() if pid is not None and pid not in killed]
                if pids:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])

        killer = threading.Thread(target=kill_two_workers)
        killer.start()
        try:
            records = evaluate(examples, [[Sample(sql)] for sql in predictions], store)
        finally:
            stop.set()
            killer.join()
    assert len(killed) == 2
    for record, verdict in zip(records, official, strict=False):
        assert "worker process died" not in record.reason
        if "skipped" in verdict or verdict["exec"] == "timeout":
            continue
        assert int(record.match) == verdict["exec"], record.index
