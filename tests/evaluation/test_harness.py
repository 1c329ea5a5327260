"""``evaluate`` over a gold store: the ODT analysis uses the schema, as the environment's feedback
does; hardness comes from the store; skipped and invalid examples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.embedded import EMBEDDED_DIR
from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env.core import exec_limits, make_store
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.odt import diagnose, prepare_gold
from progress_sql.odt.tags import Finding
from progress_sql.types import Example, ExecResult, ResultPreview, plain
from tests.conftest import build_database

#: Unqualified ``price``: the schema attributes it to contact_lenses.
GOLD = (
    "SELECT supplier_name FROM suppliers JOIN contact_lenses ON suppliers.supplier_id = contact_lenses.supplier_id "
    "WHERE price > 20"
)
WRONG = GOLD.replace("WHERE price > 20", "WHERE contact_lenses.price > 40")


@pytest.fixture(scope="module")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("harness"))


def test_the_analysis_agrees_with_the_environments_feedback(lenses_db: Path, pool: ExecutionPool) -> None:
    example = Example(0, "Suppliers of lenses over 20?", "contact_lenses", str(lenses_db), GOLD)
    cache = GoldCache()
    config = EnvConfig(max_turns=1)
    store = GoldStore(get_preset("strict"), pool=pool, cache=cache, limits=exec_limits(config))
    [record] = evaluate([example], [[Sample(WRONG)]], store)
    assert (record.status, record.match, record.hardness, record.level) == ("scored", False, "medium", "medium")
    env = SQLRefineEnv(config, store=make_store(config, pool=pool, cache=cache))
    env.reset(example)
    info = env.step(f"<think>x</think><sql>{WRONG}</sql>").info
    assert record.tags == info.tags == ()  # the same structure; only the value differs
    assert record.f_struct == round(info.f_struct, 6) == 1.0
    # Without the schema (the analysis before issue 13) the unqualified column looked like another one.
    assert diagnose(WRONG, prepare_gold(GOLD)).tags == ("WHERE_ERROR",)
    assert (cache.misses, cache.hits) == (1, 1)  # the environment's store found the gold the evaluation ran


def test_skipped_and_invalid_examples(lenses_db: Path, pool: ExecutionPool, tmp_path: Path) -> None:
    store = GoldStore(get_preset("strict"), pool=pool)
    missing = Example(0, "?", "nowhere", str(tmp_path / "nowhere.sqlite"), "SELECT count(*) FROM t")
    broken = Example(1, "?", "contact_lenses", str(lenses_db), "SELECT * FROM no_such_table")
    skipped, invalid = evaluate([missing, broken], [[Sample("SELECT 1")], [Sample("SELECT 1")]], store)
    assert (skipped.status, skipped.verdict, skipped.hardness) == ("skipped", "skipped", "easy")
    assert (invalid.status, invalid.verdict, invalid.samples) == ("gold_invalid", "gold_invalid", 1)
    assert "no_such_table" in invalid.reason
    with pytest.raises(ValueError, match="has no samples"):
        evaluate([broken], [[]], store)


class CountingPool(ExecutionPool):
    """The real execution pool, keeping every statement it was given."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.jobs: list[ExecJob] = []

    def run_many(self, jobs: Sequence[ExecJob], **callbacks: Any) -> list[ExecResult]:  # run() comes here too
        self.jobs.extend(jobs)
        return super().run_many(jobs, **callbacks)


def test_records_keep_the_first_rows_and_the_findings_of_what_they_judged() -> None:
    database = str(EMBEDDED_DIR / "concert_singer" / "concert_singer.sqlite")
    nested = "SELECT song_name FROM singer WHERE age > (SELECT avg(age) FROM singer)"
    examples = [
        Example(0, "Songs of singers older than average?", "concert_singer", database, nested),
        Example(1, "Singer names?", "concert_singer", database, "SELECT name FROM singer ORDER BY name"),
    ]
    samples = [[Sample(nested.replace("avg(age)", "max(age)"))], [Sample("SELECT name FROM singer ORDER BY name")]]
    with CountingPool(1) as pool:
        without = evaluate(examples, samples, GoldStore(get_preset("strict"), pool=pool))
        ran = len(pool.jobs)
        store = GoldStore(get_preset("strict"), pool=pool)  # a fresh store: the same statements run again
        kept = evaluate(examples, samples, store, preview_rows=2)
        assert len(pool.jobs) == 2 * ran  # keeping the rows runs nothing more
        gold_rows = [store.prepare(e).results[0] for e in examples]
        answer = pool.run(ExecJob(database, samples[1][0].sql or "", store.limits))
    assert all(r.gold_result is None and r.pred_result is None for r in without)
    assert [r.gold_result for r in kept] == [ResultPreview.of(result, 2) for result in gold_rows]
    assert kept[1].pred_result == ResultPreview.of(answer, 2)
    assert kept[1].pred_result is not None
    assert len(kept[1].pred_result.rows) == 2
    assert kept[1].pred_result.row_count == len(answer.rows) > 2
    # the wrong aggregate sits in the WHERE clause's subquery: the record says where
    assert Finding("AGGREGATION_MISMATCH", ("where",)) in kept[0].findings
    assert {f.tag for f in kept[0].findings} == set(kept[0].tags)
    assert plain(kept[0])["findings"][0] == {"tag": kept[0].findings[0].tag, "location": ["where"]}
    assert (kept[1].findings, kept[1].tags) == ((), ())
