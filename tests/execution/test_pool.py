"""The pool: results in input order, a killed worker loses only its own item, clean shutdown."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.worker import ExecJob

CYCLE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def test_results_come_back_in_input_order(compare_db: Path, pool: ExecutionPool) -> None:
    jobs = [ExecJob(str(compare_db), f"SELECT {i}, count(*) FROM singer") for i in range(40)]
    results = pool.run_many(jobs)
    assert [r.rows for r in results] == [((i, 6),) for i in range(40)]


@pytest.mark.slow
def test_killing_a_worker_mid_batch_loses_no_other_result(compare_db: Path) -> None:
    slow_index = 5
    # Without the kill, the slow item would run into its 60 s deadline: a kill is what ends it.
    jobs = [ExecJob(str(compare_db), f"SELECT {i}, name FROM singer WHERE singer_id = 1") for i in range(12)]
    jobs[slow_index] = ExecJob(str(compare_db), CYCLE, ExecLimits(timeout_s=60))

    def kill_later(index: int, pid: int) -> None:
        if index == slow_index:
            threading.Timer(0.5, os.kill, args=(pid, signal.SIGKILL)).start()

    with ExecutionPool(workers=2) as pool:
        results = pool.run_many(jobs, on_start=kill_later)
        assert results[slow_index].status == "error"
        assert "worker process died" in (results[slow_index].error or "")
        for i, result in enumerate(results):
            if i != slow_index:
                assert result.status == "ok"
                assert result.rows == ((i, "Joe"),)
        # The replaced worker serves the next batch.
        again = pool.run_many([ExecJob(str(compare_db), "SELECT count(*) FROM singer")] * 4)
        assert [r.rows for r in again] == [((6,),)] * 4


def test_close_stops_every_worker(compare_db: Path) -> None:
    pool = ExecutionPool(workers=2)
    pool.run_many([ExecJob(str(compare_db), "SELECT 1")] * 4)
    pids = [p for p in pool.worker_pids() if p is not None]
    assert pids
    pool.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    with pytest.raises(RuntimeError, match="closed"):
        pool.run_many([])


def test_missing_database_is_an_error_result(tmp_path: Path, pool: ExecutionPool) -> None:
    result = pool.run(ExecJob(str(tmp_path / "absent.sqlite"), "SELECT 1"))
    assert result.status == "error"
    assert "not found" in (result.error or "")
    assert not (tmp_path / "absent.sqlite").exists()


def test_a_failing_callback_is_raised_not_turned_into_results(compare_db: Path, pool: ExecutionPool) -> None:
    def broken(_index: int, _result: object) -> None:
        raise KeyError("callback bug")

    with pytest.raises(KeyError, match="callback bug"):
        pool.run_many([ExecJob(str(compare_db), "SELECT 1")] * 3, on_result=broken)
    assert pool.run(ExecJob(str(compare_db), "SELECT 1")).rows == ((1,),)  # the pool still works


def test_a_slow_query_holds_up_only_its_own_worker(compare_db: Path) -> None:
    """Two threads share a pool: the quick query of the second thread completes while the first
    thread's query is still running into its deadline (an RL worker runs many episodes at once)."""
    slow_started = threading.Event()
    slow_done = threading.Event()
    slow: list[object] = []

    def run_slow(pool: ExecutionPool) -> None:
        job = ExecJob(str(compare_db), CYCLE, ExecLimits(timeout_s=3))
        slow.extend(pool.run_many([job], on_start=lambda _i, _pid: slow_started.set()))
        slow_done.set()

    with ExecutionPool(workers=2) as pool:
        thread = threading.Thread(target=run_slow, args=(pool,))
        thread.start()
        assert slow_started.wait(30)
        quick = pool.run(ExecJob(str(compare_db), "SELECT count(*) FROM singer"))
        finished_first = not slow_done.is_set()
        thread.join()
    assert quick.rows == ((6,),)
    assert finished_first, "the quick query waited for the slow one"
    assert [getattr(r, "status", None) for r in slow] == ["timeout"]
