"""The pool: results in input order, a killed worker loses nothing (its query is rerun once) and a query
whose worker dies twice loses only its own item, clean shutdown, a clear error when workers cannot start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from progress_sql.errors import WorkerStartError
from progress_sql.execution.executor import MAX_TIMEOUT_S, ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool

CYCLE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def test_results_come_back_in_input_order(compare_db: Path, pool: ExecutionPool) -> None:
    jobs = [ExecJob(str(compare_db), f"SELECT {i}, count(*) FROM singer") for i in range(40)]
    results = pool.run_many(jobs)
    assert [r.rows for r in results] == [((i, 6),) for i in range(40)]


@pytest.mark.slow
def test_a_query_whose_worker_dies_twice_fails_alone(compare_db: Path) -> None:
    slow_index = 5
    # Without the kills, the slow item would run into its 60 s deadline: the second kill is what ends it.
    jobs = [ExecJob(str(compare_db), f"SELECT {i}, name FROM singer WHERE singer_id = 1") for i in range(12)]
    jobs[slow_index] = ExecJob(str(compare_db), CYCLE, ExecLimits(timeout_s=60))

    def kill_later(index: int, pid: int) -> None:
        if index == slow_index:
            threading.Timer(0.5, os.kill, args=(pid, signal.SIGKILL)).start()

    with ExecutionPool(workers=2) as pool:
        results = pool.run_many(jobs, on_start=kill_later)
        assert results[slow_index].status == "error"
        assert "worker process died 2 times" in (results[slow_index].error or "")
        assert results[slow_index].failed_outside  # never cached: not the query's own result
        for i, result in enumerate(results):
            if i != slow_index:
                assert result.status == "ok"
                assert result.rows == ((i, "Joe"),)
        # The replaced worker serves the next batch.
        again = pool.run_many([ExecJob(str(compare_db), "SELECT count(*) FROM singer")] * 4)
        assert [r.rows for r in again] == [((6,),)] * 4


@pytest.mark.slow
def test_a_worker_killed_from_outside_costs_its_query_nothing(compare_db: Path) -> None:
    """The first death is not the query's fault (an outside kill, an OOM killer aiming elsewhere): the
    query is rerun on a fresh worker and its result is the real one."""
    jobs = [ExecJob(str(compare_db), f"SELECT {i}, count(*) FROM singer, singer AS b") for i in range(8)]
    jobs[2] = jobs[6] = ExecJob(
        str(compare_db), CYCLE.replace("SELECT 1", "SELECT 1 WHERE 0"), ExecLimits(timeout_s=60)
    )
    starts: dict[int, list[int]] = {}

    def kill_first_start(index: int, pid: int) -> None:
        starts.setdefault(index, []).append(pid)
        if index in (2, 6) and len(starts[index]) == 1:
            os.kill(pid, signal.SIGKILL)

    with ExecutionPool(workers=2) as pool:
        results = pool.run_many(jobs, on_start=kill_first_start)
    assert [r.status for r in results] == ["ok"] * 8
    assert results[2].rows == results[6].rows == ((0,),)
    assert [r.rows for i, r in enumerate(results) if i not in (2, 6)] == [((i, 36),) for i in (0, 1, 3, 4, 5, 7)]
    assert len(starts[2]) == len(starts[6]) == 2
    assert starts[2][0] != starts[2][1]


def test_a_worker_that_died_while_idle_is_replaced_before_its_next_job(compare_db: Path) -> None:
    """A worker that ended between two batches is seen as ended before a job is sent to it: the job starts once,
    on a fresh worker, and is never charged with a death."""
    with ExecutionPool(workers=1) as pool:
        assert pool.run(ExecJob(str(compare_db), "SELECT 1")).rows == ((1,),)
        (dead,) = pool.worker_pids()
        assert dead is not None
        os.kill(dead, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until its parent (the fork server) has reaped it
            try:
                os.kill(dead, 0)
            except ProcessLookupError:
                break
            time.sleep(0.01)
        starts: list[int] = []
        result = pool.run_many([ExecJob(str(compare_db), "SELECT 2")], on_start=lambda _index, pid: starts.append(pid))
    assert result[0].rows == ((2,),)
    assert len(starts) == 1
    assert starts[0] != dead


def test_the_longest_deadline_runs_the_query_and_a_longer_one_is_refused(compare_db: Path) -> None:
    """poll() waits at most 2**31 - 1 ms, less than the longest deadline plus the kill margin: the pool then waits
    for the answer without a limit instead of failing the job. A deadline that is longer, or not finite, is
    refused where the limits are made."""
    with ExecutionPool(workers=1) as pool:
        result = pool.run(ExecJob(str(compare_db), "SELECT 7", ExecLimits(timeout_s=MAX_TIMEOUT_S)))
    assert (result.status, result.rows) == ("ok", ((7,),))
    for endless in (MAX_TIMEOUT_S + 1, 1e9, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="at most 2,147,483 seconds"):
            ExecLimits(timeout_s=endless)


def test_a_worker_that_cannot_start_is_an_error_of_the_run_not_of_a_query(compare_db: Path) -> None:
    # A spawned interpreter cannot be ready within a millisecond (a fork of the preloaded server can).
    slow = ExecutionPool(workers=1, start_timeout_s=0.001, start_method="spawn")
    with slow as pool, pytest.raises(WorkerStartError, match="not ready"):
        pool.run_many([ExecJob(str(compare_db), "SELECT 1")] * 3)


@pytest.mark.slow
def test_a_script_without_the_main_guard_gets_an_error_naming_it(tmp_path: Path, compare_db: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from progress_sql.execution.pool import ExecutionPool
            from progress_sql.execution.jobs import ExecJob

            with ExecutionPool(workers=1) as pool:
                print(pool.run(ExecJob({str(compare_db)!r}, "SELECT 1")))
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode != 0
    assert "WorkerStartError" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
    assert "timeout" not in done.stdout + done.stderr


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


def test_a_large_batch_in_chunks_loses_nothing_to_a_hung_query(compare_db: Path) -> None:
    """A batch large enough to go in chunks: a query that runs into its deadline kills only its worker;
    the rest of its chunk runs on the replacement, every result in input order, each start heard once."""
    hung = 37
    jobs = [ExecJob(str(compare_db), f"SELECT {i}, count(*) FROM singer") for i in range(200)]
    jobs[hung] = ExecJob(str(compare_db), CYCLE, ExecLimits(timeout_s=1))
    starts: dict[int, list[int]] = {}
    with ExecutionPool(workers=2, kill_margin_s=0.5) as pool:
        results = pool.run_many(jobs, on_start=lambda i, pid: starts.setdefault(i, []).append(pid))
    assert results[hung].status == "timeout"
    assert [r.rows for i, r in enumerate(results) if i != hung] == [((i, 6),) for i in range(200) if i != hung]
    assert sorted(starts) == list(range(200))
    assert all(len(pids) == 1 for pids in starts.values())
    assert pool_chunk_sizes_seen(starts) > 1


def pool_chunk_sizes_seen(starts: dict[int, list[int]]) -> int:
    """The longest run of consecutive jobs started on one worker (> 1: they went in a chunk)."""
    longest = run = 1
    for index in range(1, len(starts)):
        run = run + 1 if starts[index] == starts[index - 1] else 1
        longest = max(longest, run)
    return longest


@pytest.mark.slow
def test_a_worker_killed_in_the_middle_of_a_chunk_costs_its_query_nothing(compare_db: Path) -> None:
    """The job running when its worker is killed from outside is rerun on a fresh worker with the rest
    of its chunk; every result is the real one."""
    victim = 41
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c"
    jobs = [ExecJob(str(compare_db), f"SELECT {i}, count(*) FROM singer") for i in range(200)]
    jobs[victim] = ExecJob(str(compare_db), slow, ExecLimits(timeout_s=60))
    starts: dict[int, list[int]] = {}

    def kill_first_start(index: int, pid: int) -> None:
        starts.setdefault(index, []).append(pid)
        if index == victim and len(starts[index]) == 1:
            os.kill(pid, signal.SIGKILL)

    with ExecutionPool(workers=2) as pool:
        results = pool.run_many(jobs, on_start=kill_first_start)
    assert [r.status for r in results] == ["ok"] * 200
    assert results[victim].rows == ((3000000,),)
    assert [r.rows for i, r in enumerate(results) if i != victim] == [((i, 6),) for i in range(200) if i != victim]
    assert len(starts[victim]) == 2
    assert starts[victim][0] != starts[victim][1]


def test_the_callers_work_runs_while_a_lone_query_runs(compare_db: Path, pool: ExecutionPool) -> None:
    """``meanwhile`` runs once, in the calling thread, after the job has reached its worker and before its
    result is heard: the environment diagnoses an answer while the worker runs the answer's SQL."""
    events: list[tuple[str, int | None]] = []
    results = pool.run_many(
        [ExecJob(str(compare_db), "SELECT count(*) FROM singer")],
        on_start=lambda _i, _pid: events.append(("start", None)),
        on_result=lambda _i, _r: events.append(("result", None)),
        meanwhile=lambda: events.append(("meanwhile", threading.get_ident())),
    )
    assert [event for event, _ in events] == ["start", "meanwhile", "result"]
    assert events[1][1] == threading.get_ident()
    assert results[0].rows == ((6,),)


@pytest.mark.parametrize("jobs", [1, 40], ids=["one driver", "two drivers"])
def test_the_callers_work_fails_after_every_job_has_answered(compare_db: Path, pool: ExecutionPool, jobs: int) -> None:
    """An exception from ``meanwhile`` is raised once the batch has ended, never leaving a worker with jobs."""
    calls: list[int] = []
    heard: list[int] = []

    def broken() -> None:
        calls.append(threading.get_ident())
        raise KeyError("caller bug")

    batch = [ExecJob(str(compare_db), f"SELECT {i}") for i in range(jobs)]
    with pytest.raises(KeyError, match="caller bug"):
        pool.run_many(batch, on_result=lambda i, _r: heard.append(i), meanwhile=broken)
    assert calls == [threading.get_ident()]
    assert sorted(heard) == list(range(jobs))
    assert pool.run(ExecJob(str(compare_db), "SELECT 1")).rows == ((1,),)  # the pool still works
