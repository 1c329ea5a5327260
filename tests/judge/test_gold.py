"""The gold store: each (database, gold) prepared once, also under concurrency; the ODT reference
built with the schema; failing golds as values (and as errors for ``require``); suite lookups."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from progress_sql.data.schema import read_schema
from progress_sql.errors import DatasetError, GoldQueryError
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore, SuiteVerdict
from progress_sql.odt import diagnose, prepare_gold
from progress_sql.types import Example, ExecResult
from tests.conftest import build_database

_T = TypeVar("_T")

#: Unqualified ``price``: only the schema says it belongs to contact_lenses.
JOINED = (
    "SELECT supplier_name FROM suppliers JOIN contact_lenses ON suppliers.supplier_id = contact_lenses.supplier_id "
    "WHERE price > 20"
)
QUALIFIED = JOINED.replace("WHERE price", "WHERE contact_lenses.price")
#: A gold that takes a while, so that concurrent callers really overlap.
SLOW = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000) SELECT count(*) FROM c"


class CountingPool(ExecutionPool):
    """An execution pool that records every job it runs."""

    def __init__(self) -> None:
        super().__init__(workers=2)
        self.jobs: list[ExecJob] = []
        self._record = threading.Lock()

    def run_many(self, jobs: Sequence[ExecJob], **callbacks: Any) -> list[ExecResult]:
        with self._record:
            self.jobs.extend(jobs)
        return super().run_many(jobs, **callbacks)

    def runs_of(self, sql: str) -> int:
        return sum(job.sql == sql for job in self.jobs)


@pytest.fixture(scope="module")
def counting_pool() -> Iterator[CountingPool]:
    with CountingPool() as shared:
        yield shared


@pytest.fixture(scope="module")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("gold_store"))


def example(db: Path, gold: str, index: int = 0) -> Example:
    return Example(index, "A question.", "contact_lenses", str(db), gold)


def at_once(callers: int, call: Callable[[], _T]) -> list[_T]:
    """``call()`` on ``callers`` threads released together; what each returned."""
    start = threading.Barrier(callers)
    returned: list[_T] = []

    def work() -> None:
        start.wait()
        returned.append(call())

    threads = [threading.Thread(target=work) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return returned


def test_concurrent_callers_prepare_an_example_once(lenses_db: Path, counting_pool: CountingPool) -> None:
    cache = GoldCache()
    store = GoldStore(get_preset("strict"), pool=counting_pool, cache=cache)
    item = example(lenses_db, SLOW)
    prepared = at_once(8, lambda: store.prepare(item))
    assert len(prepared) == 8
    assert all(p is prepared[0] for p in prepared)
    assert counting_pool.runs_of(SLOW) == 1
    assert (cache.misses, cache.hits) == (1, 0)
    assert prepared[0].results[0].rows == ((300000,),)
    assert store.prepare(item) is prepared[0]  # and later callers get the same preparation
    assert counting_pool.runs_of(SLOW) == 1


def test_prepare_many_runs_each_distinct_gold_once_in_one_batch(lenses_db: Path, counting_pool: CountingPool) -> None:
    store = GoldStore(get_preset("strict"), pool=counting_pool)
    golds = ["SELECT count(*) FROM suppliers", "SELECT count(*) FROM sales"]
    items = [example(lenses_db, golds[i % 2], index=i) for i in range(6)]
    before = len(counting_pool.jobs)
    prepared = store.prepare_many(items)
    assert len(counting_pool.jobs) - before == 2
    assert [p.results[0].rows for p in prepared] == [((3,),), ((2,),)] * 3
    assert prepared[0] is prepared[2] is store.prepare(items[4])
    assert len(counting_pool.jobs) - before == 2


def test_concurrent_batches_prepare_each_gold_once(lenses_db: Path, counting_pool: CountingPool) -> None:
    """Batches of the same golds prepared at once (coalesced resets on several lanes): each gold runs
    once; the batches that find it being prepared wait for it and get the same preparation."""
    store = GoldStore(get_preset("strict"), pool=counting_pool)
    slow = SLOW.replace("300000", "300001")  # a gold no other test ran
    items = [example(lenses_db, slow, index=i) for i in range(2)] + [example(lenses_db, "SELECT 2 + 2")]
    prepared = at_once(6, lambda: store.prepare_many(items))
    assert len(prepared) == 6
    assert counting_pool.runs_of(slow) == 1
    assert counting_pool.runs_of("SELECT 2 + 2") == 1
    assert all(batch[0] is batch[1] is prepared[0][0] and batch[2] is prepared[0][2] for batch in prepared)
    assert prepared[0][0].results[0].rows == ((300001,),)


def test_reference_is_built_with_the_schema(lenses_db: Path, pool: ExecutionPool) -> None:
    store = GoldStore(get_preset("strict"), pool=pool)
    prepared = store.prepare(example(lenses_db, JOINED))
    schema = read_schema(lenses_db)
    assert prepared.reference.schema == schema == store.schema(str(lenses_db))
    assert prepared.reference == prepare_gold(JOINED, schema, store.odt)
    assert prepared.hardness == "medium"
    assert prepared.error is None
    # With the schema, the unqualified column is contact_lenses.price, as the qualified answer says.
    assert diagnose(QUALIFIED, prepared.reference).tags == ()
    assert diagnose(QUALIFIED, prepare_gold(JOINED)).tags == ("WHERE_ERROR",)


def test_diagnoses_are_kept_per_gold_and_answer(
    lenses_db: Path, pool: ExecutionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store's diagnosis is the ODT's, kept per (gold, answer): the same answer again gets the same
    record, another gold or answer its own, and only the last DIAGNOSES_KEPT stay."""
    import progress_sql.judge.gold as gold_module

    store = GoldStore(get_preset("strict"), pool=pool)
    joined, counted = example(lenses_db, JOINED), example(lenses_db, "SELECT count(*) FROM suppliers")
    answers = [QUALIFIED, "SELECT supplier_name FROM suppliers", "SELECT count(*) FROM sales", "SELEC nonsense", ""]
    for item in (joined, counted):
        gold = store.prepare(item)
        for answer in answers:
            made = store.diagnosis(item, answer, gold)
            assert made == diagnose(answer, gold.reference, config=store.odt)
            assert store.diagnosis(item, answer, gold) is made
    assert store.diagnosis(joined, QUALIFIED, store.prepare(joined)).tags == ()
    assert store.diagnosis(counted, QUALIFIED, store.prepare(counted)).tags != ()

    monkeypatch.setattr(gold_module, "DIAGNOSES_KEPT", 2)
    small = GoldStore(get_preset("strict"), pool=pool)
    gold = small.prepare(joined)
    first = small.diagnosis(joined, answers[0], gold)
    small.diagnosis(joined, answers[1], gold)
    assert small.diagnosis(joined, answers[0], gold) is first  # used last: kept
    small.diagnosis(joined, answers[2], gold)  # the least recently used (answers[1]) goes
    assert small.diagnosis(joined, answers[0], gold) is first
    again = small.diagnosis(joined, answers[1], gold)
    assert again == diagnose(answers[1], gold.reference, config=small.odt)
    small.forget_diagnoses()
    assert small.diagnosis(joined, answers[0], gold) is not first


def test_failing_gold_is_a_value_and_require_raises(lenses_db: Path, pool: ExecutionPool) -> None:
    store = GoldStore(get_preset("strict"), pool=pool)
    bad = example(lenses_db, "SELECT * FROM no_such_table", index=7)
    prepared = store.prepare(bad)
    assert prepared.error is not None
    assert "no_such_table" in prepared.error
    with pytest.raises(GoldQueryError, match=r"example 7 \(contact_lenses\): the gold query .*no_such_table"):
        store.require(bad)
    capped = GoldStore(get_preset("strict"), pool=pool, limits=ExecLimits(max_rows=2))
    assert capped.prepare(example(lenses_db, "SELECT * FROM suppliers")).error == "the gold query exceeds the row cap"


def test_a_missing_database_is_a_dataset_error(tmp_path: Path, pool: ExecutionPool) -> None:
    store = GoldStore(get_preset("strict"), pool=pool)
    missing = example(tmp_path / "absent.sqlite", "SELECT 1")
    with pytest.raises(DatasetError, match="database file not found"):
        store.prepare(missing)
    with pytest.raises(DatasetError, match="database file not found"):
        store.prepare_many([missing])


def test_predictions_and_details(lenses_db: Path, pool: ExecutionPool) -> None:
    store = GoldStore(get_preset("spider"), pool=pool)
    item = example(lenses_db, "SELECT DISTINCT supplier_name FROM suppliers")
    assert store.run_pred(item, "SELECT supplier_name FROM suppliers").rows == (("Acme",), ("Bright",), ("Clear",))
    assert store.judge(item, "SELECT supplier_name FROM suppliers ORDER BY 1 DESC").match
    assert not store.judge(item, "SELECT supplier_name FROM suppliers LIMIT 1").match
    details = store.details(str(lenses_db), "compact")
    assert "suppliers" in details
    assert store.details(str(lenses_db), "compact") is details
    assert store.details(str(lenses_db), "none") != details


def test_suite_verdicts_follow_the_lookup(lenses_db: Path, tmp_path: Path, pool: ExecutionPool) -> None:
    # A "suite database" where supplier Clear is missing: a hard-coded count is caught there.
    other = build_database("contact_lenses.sql", tmp_path / "suite")

    with sqlite3.connect(other) as connection:
        connection.execute("DELETE FROM suppliers WHERE supplier_name = 'Clear'")
    item = example(lenses_db, "SELECT count(*) FROM suppliers")
    honest, hard_coded = "SELECT count(supplier_id) FROM suppliers", "SELECT 3"
    lookups: dict[str, Sequence[str] | None] = {"suite": [str(other)], "empty": [], "none": None}
    expected = {"suite": [SuiteVerdict(True, 1), SuiteVerdict(False, 1)], "empty": [SuiteVerdict(True, 0)] * 2,
                "none": [None, None]}  # fmt: skip
    for name, databases in lookups.items():
        store = GoldStore(get_preset("strict"), pool=pool, suite=lambda _e, found=databases: found)
        assert store.suite_databases(item) == databases
        assert store.suite_verdicts([(item, honest), (item, hard_coded)]) == expected[name]
        judged = store.judge_many([item, item, item], [honest, hard_coded, None])
        assert [j.match if j else None for j in judged] == [True, name != "suite", None]
        assert judged[1] is not None
        assert judged[1].verdict.match
    assert GoldStore(get_preset("strict"), pool=pool).suite_verdicts([(item, hard_coded)]) == [None]


def test_judge_many_judges_writes_by_their_checks_and_runs_each_job_once(
    pool: ExecutionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from progress_sql.data.embedded import write_tasks

    task = write_tasks()[0]
    store = GoldStore(get_preset("strict"), pool=pool)
    store.prepare(task)
    sent: list[int] = []
    run_many = pool.run_many

    def counting(jobs: Sequence[object], **kwargs: object) -> list[ExecResult]:
        sent.append(len(jobs))
        return run_many(jobs, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pool, "run_many", counting)
    judged = store.judge_many([task, task, task], [task.gold_sql, "DELETE FROM singer", task.gold_sql])
    assert sent == [2]  # the gold's script is an answer twice: it runs once
    assert [j.match if j else None for j in judged] == [True, False, True]
    assert judged[0] is not None
    assert judged[0].checks is not None
    passed, total = judged[0].checks
    assert passed == total > 0
    assert judged[1] is not None
    assert judged[1].checks is not None
    assert judged[1].checks[0] < total


def test_owns_and_closes_its_pool_only_without_one(pool: ExecutionPool) -> None:
    with GoldStore(get_preset("strict")) as own:
        assert own.pool is not pool
    with pytest.raises(RuntimeError, match="closed"):
        own.pool.run_many([ExecJob(":memory:", "SELECT 1", own.limits)])
    with GoldStore(get_preset("strict"), pool=pool):
        pass
    assert pool.run_many([]) == []


def test_disk_cache_keeps_the_gold_analysis_across_runs(
    lenses_db: Path, tmp_path: Path, pool: ExecutionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from progress_sql.judge import gold as gold_module
    from progress_sql.odt import OdtConfig

    item = example(lenses_db, JOINED)
    first = GoldStore(get_preset("strict"), pool=pool, cache=GoldCache(tmp_path / "cache")).prepare(item)
    assert list((tmp_path / "cache" / "references").rglob("*.pickle"))

    def rebuilt(*_args: object) -> None:
        raise AssertionError("the analysis was built again instead of read from the cache")

    monkeypatch.setattr(gold_module, "prepare_reference", rebuilt)
    later = GoldStore(get_preset("strict"), pool=pool, cache=GoldCache(tmp_path / "cache"))
    again = later.prepare(item)
    assert again.reference == first.reference
    assert again.reference.schema is later.schema(str(lenses_db))  # the store's own schema object
    assert again.hardness == first.hardness == "medium"
    assert diagnose(QUALIFIED, again.reference) == diagnose(QUALIFIED, first.reference)
    # Another database content, gold text or ODT config is another key.
    key = gold_module.reference_key(str(lenses_db), JOINED, OdtConfig())
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes(lenses_db.read_bytes() + b"\0")
    assert gold_module.reference_key(str(copy), JOINED, OdtConfig()) != key
    assert gold_module.reference_key(str(lenses_db), JOINED + " ", OdtConfig()) != key
    assert gold_module.reference_key(str(lenses_db), JOINED, OdtConfig(alpha=0.5)) != key


def test_damaged_cached_analysis_is_built_again(lenses_db: Path, tmp_path: Path, pool: ExecutionPool) -> None:
    item = example(lenses_db, JOINED)
    first = GoldStore(get_preset("strict"), pool=pool, cache=GoldCache(tmp_path / "cache")).prepare(item)
    for path in (tmp_path / "cache" / "references").rglob("*.pickle"):
        path.write_bytes(b"not a pickle")
    again = GoldStore(get_preset("strict"), pool=pool, cache=GoldCache(tmp_path / "cache")).prepare(item)
    assert again.reference == first.reference
