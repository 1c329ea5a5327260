"""The coalescer of concurrent steps (env/coalesce.py): turns of different episodes stepped from many
threads at once reach the workers in shared batches, each turn ends as it would alone, one episode's
error reaches its own caller only, and a lone call leads its own batch without waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from progress_sql.env import EnvConfig, SQLRefineEnv, StepResult
from progress_sql.env.coalesce import Coalescer, CoalescerCounts, GroupCommit
from progress_sql.env.core import make_store
from progress_sql.errors import GoldQueryError
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool, OnResult, OnStart
from progress_sql.judge.gold import GoldStore
from progress_sql.types import Example, ExecResult
from tests.env.conftest import GOLD
from tests.env.test_probe_protocol import WRONG
from tests.env.test_step_many import SCRIPTS, _play_alone, answer


class GatedPool(ExecutionPool):
    """The real one-worker pool, counting the batches it is handed; once :meth:`hold` is called, the
    next batch waits until ``until()`` is true, so the calls made meanwhile are known to overlap it."""

    def __init__(self, workers: int = 1) -> None:
        super().__init__(workers=workers)
        self.batches: list[int] = []
        self.entered = threading.Event()  # the held batch has reached the pool
        self.answered: dict[str, float] = {}
        self._until: Callable[[], bool] | None = None

    def hold(self, until: Callable[[], bool]) -> None:
        self.batches.clear()
        self._until = until

    def run_many(
        self,
        jobs: Sequence[ExecJob],
        *,
        on_start: OnStart | None = None,
        on_result: OnResult | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> list[ExecResult]:
        until, self._until = self._until, None
        if until is not None:
            self.entered.set()
            deadline = time.monotonic() + 60
            while not until():
                assert time.monotonic() < deadline, "the other calls never queued"
                time.sleep(0.001)
        self.batches.append(len(jobs))

        def heard(index: int, result: ExecResult) -> None:
            self.answered[jobs[index].sql] = time.monotonic()  # when the job's result reached the parent
            if on_result is not None:
                on_result(index, result)

        return super().run_many(jobs, on_start=on_start, on_result=heard, meanwhile=meanwhile)


def _play_threads(coalescer: Coalescer, envs: list[SQLRefineEnv], scripts: list[list[str]]) -> list[list[Any]]:
    """Each episode played on its own thread, every turn through ``coalescer``."""

    def play(env: SQLRefineEnv, script: list[str]) -> list[StepResult]:
        steps = []
        for response in script:
            steps.append(coalescer.step(env, response))
            if steps[-1].terminated or steps[-1].truncated:
                break
        return steps

    with ThreadPoolExecutor(len(envs)) as threads:
        return list(threads.map(play, envs, scripts))


@pytest.mark.parametrize("protocol", list(SCRIPTS))
def test_episodes_stepped_from_many_threads_end_as_each_alone(protocol: str, music: Example) -> None:
    config = EnvConfig(max_turns=3, protocol=protocol, feedback="execution" if protocol == "probe" else "tags")
    scripts = SCRIPTS[protocol] * 3  # more threads than lanes: calls overlap and share batches
    with ExecutionPool(workers=1) as pool:
        store = make_store(config, pool=pool)
        alone = _play_alone(config, store, music, scripts)
        coalescer = Coalescer(lanes=pool.size)
        envs = [SQLRefineEnv(config, store=store) for _ in scripts]
        for env in envs:
            coalescer.reset(env, music)
        together = _play_threads(coalescer, envs, scripts)
    assert together == alone


def _distinct_answers(count: int) -> list[str]:
    return [answer(f"SELECT name FROM singer WHERE age > {age}") for age in range(count)]


def test_calls_that_overlap_a_batch_in_flight_share_the_next_one(music: Example) -> None:
    config = EnvConfig(max_turns=2)
    coalescer = Coalescer(lanes=1)
    callers = 6
    # the first call's batch is held until the five others have queued behind it
    with GatedPool() as pool:
        store = make_store(config, pool=pool)
        envs = [SQLRefineEnv(config, store=store) for _ in range(callers)]
        for env in envs:
            env.reset(music)
        pool.hold(until=lambda: coalescer.turns.queued() == callers - 1)
        responses = _distinct_answers(callers)
        first = threading.Thread(target=coalescer.step, args=(envs[0], responses[0]))
        first.start()
        assert pool.entered.wait(60)  # the first call leads; its batch is held in the pool
        with ThreadPoolExecutor(callers - 1) as threads:
            steps = list(threads.map(coalescer.step, envs[1:], responses[1:]))
        first.join()
        assert pool.batches == [1, callers - 1]  # six calls, two round trips to the workers
        counts = coalescer.turns.counts()
        assert (counts.batches, counts.items) == (2, callers)
        alone = _play_alone(config, store, music, [[r] for r in responses[1:]])
    assert [[step] for step in steps] == alone


def test_an_error_of_one_episode_reaches_its_caller_only(music: Example) -> None:
    """A batch that fails as a whole (here one episode's store has a closed pool) after some of its turns
    were answered: the broken episode's caller gets its own error (its turn played again alone), the
    others the results they were given as their queries came back."""
    config = EnvConfig(max_turns=2)
    coalescer = Coalescer(lanes=1)
    closed = ExecutionPool(workers=1)
    broken = SQLRefineEnv(config, store=make_store(config, pool=closed))
    broken.reset(music)
    closed.close()
    with GatedPool() as pool:
        store = make_store(config, pool=pool)
        envs = [SQLRefineEnv(config, store=store) for _ in range(3)]
        over = SQLRefineEnv(config, store=store)
        for env in [*envs, over]:
            env.reset(music)
        over.step(answer(GOLD))  # a match: the episode is over
        pool.hold(until=lambda: coalescer.turns.queued() == 3)
        leader = threading.Thread(target=coalescer.step, args=(envs[0], answer(WRONG)))
        leader.start()
        assert pool.entered.wait(60)
        with ThreadPoolExecutor(4) as threads:
            ok = [threads.submit(coalescer.step, env, answer(GOLD)) for env in envs[1:]]
            while coalescer.turns.queued() < 2:
                time.sleep(0.001)  # the broken episode queues last: its store runs after theirs
            failing = threads.submit(coalescer.step, broken, answer(GOLD))
            finished = threads.submit(coalescer.step, over, answer(GOLD))
            with pytest.raises(RuntimeError, match="ExecutionPool is closed"):
                failing.result()
            with pytest.raises(RuntimeError, match="the episode is over"):
                finished.result()  # raised in its caller's thread before it queued
            assert [future.result().info.match for future in ok] == [True, True]
        leader.join()
    # the held batch; the batch of three: the two good turns' one query ran and they were played and
    # answered as it came back, then the closed pool failed (only the broken turn is played again, alone)
    assert pool.batches == [1, 1]
    counts = coalescer.turns.counts()
    assert (counts.batches, counts.items) == (2, 4)


@pytest.mark.parametrize("endless_leads", [True, False])
def test_a_query_that_runs_to_its_deadline_holds_up_no_batch_mate(endless_leads: bool, music: Example) -> None:
    """An endless query and a quick one queue together and ride one batch (led by the first to queue):
    the quick one's caller is answered when its own query comes back, not when its batch-mate's
    deadline ends the batch, whichever of the two leads it."""
    config = EnvConfig(max_turns=2, timeout_s=1.5)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    coalescer = Coalescer(lanes=1)
    with GatedPool(workers=2) as pool:
        store = make_store(config, pool=pool)
        envs = [SQLRefineEnv(config, store=store) for _ in range(3)]
        for env in envs:
            env.reset(music)
        done: dict[str, float] = {}

        def step(name: str, env: SQLRefineEnv, sql: str) -> StepResult:
            result = coalescer.step(env, answer(sql))
            done[name] = time.monotonic()
            return result

        pool.hold(until=lambda: coalescer.turns.queued() == 2)
        with ThreadPoolExecutor(3) as threads:
            held = threads.submit(step, "held", envs[0], GOLD)
            assert pool.entered.wait(60)
            first, second = ("slow", endless), ("quick", GOLD)
            if not endless_leads:
                first, second = second, first
            futures = {first[0]: threads.submit(step, first[0], envs[1], first[1])}
            while coalescer.turns.queued() < 1:
                time.sleep(0.001)
            futures[second[0]] = threads.submit(step, second[0], envs[2], second[1])
            slow, quick = futures["slow"], futures["quick"]
            assert held.result().info.match
            assert quick.result().info.match
            assert slow.result().info.exec_status == "timeout"
    assert pool.batches == [1, 2]  # the held turn; then the endless and the quick query in one batch
    assert done["quick"] < pool.answered[endless]  # answered before the endless query's deadline ended it


def test_a_lone_call_leads_its_own_batch_without_waiting(music: Example) -> None:
    config = EnvConfig(max_turns=2)
    coalescer = Coalescer(lanes=1)
    with GatedPool() as pool:
        env = SQLRefineEnv(config, store=make_store(config, pool=pool))
        coalescer.reset(env, music)
        pool.batches.clear()
        step = coalescer.step(env, answer(WRONG))
        assert pool.batches == [1]
        assert coalescer.turns.counts() == CoalescerCounts(batches=1, items=1, waits=0)
        coalescer.step(env, "no sql here")  # a turn that runs nothing does not queue at all
        assert coalescer.turns.counts() == CoalescerCounts(batches=1, items=1, waits=0)
    assert not step.info.match
    assert step.info.exec_status == "ok"


def test_resets_prepare_their_golds_together_and_a_failing_gold_stays_its_own(music: Example) -> None:
    config = EnvConfig(max_turns=2)
    coalescer = Coalescer(lanes=1)
    bad = Example(1, music.question, music.db_id, music.db_path, "SELECT nme FROM singer")
    with ExecutionPool(workers=1) as pool:
        store: GoldStore = make_store(config, pool=pool)
        envs = [SQLRefineEnv(config, store=store) for _ in range(6)]
        examples = [music, bad] * 3
        with ThreadPoolExecutor(len(envs)) as threads:
            futures = [threads.submit(coalescer.reset, *pair) for pair in zip(envs, examples, strict=True)]
            for future, example in zip(futures, examples, strict=True):
                if example is bad:
                    with pytest.raises(GoldQueryError):
                        future.result()
                else:
                    assert future.result()  # the opening messages
    assert coalescer.golds.counts().items == len(envs)


def test_a_group_commit_is_bounded_and_hands_an_interruption_to_every_caller() -> None:
    held = threading.Event()
    release = threading.Event()
    batches: list[list[int]] = []

    def run(items: Sequence[int]) -> list[int]:
        batches.append(list(items))
        if len(batches) == 1:
            held.set()
            release.wait(60)
        return [item * 10 for item in items]

    commit: GroupCommit[int, int] = GroupCommit(run, lanes=1, max_batch=3)
    with ThreadPoolExecutor(8) as threads:
        first = threads.submit(commit.submit, 0)
        held.wait(60)
        rest = [threads.submit(commit.submit, item) for item in range(1, 8)]
        while commit.queued() < 7:
            time.sleep(0.001)
        release.set()
        assert [first.result(), *(f.result() for f in rest)] == [item * 10 for item in range(8)]
    assert [len(batch) for batch in batches] == [1, 3, 3, 1]

    def interrupted(items: Sequence[int]) -> list[int]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        GroupCommit(interrupted, lanes=1, max_batch=3).submit(1)
    with pytest.raises(ValueError, match="must be >= 1"):
        GroupCommit(run, lanes=0, max_batch=3)


def test_an_exception_in_playing_one_turn_of_a_batch_goes_to_its_caller_only(music: Example) -> None:
    """The leader plays its batch's turns; one that cannot be played (here the same episode's turn sent
    twice at once, a caller's mistake) raises in its own caller, the others of the batch are played."""
    config = EnvConfig(max_turns=3)
    coalescer = Coalescer(lanes=1)
    with GatedPool() as pool:
        store = make_store(config, pool=pool)
        leader_env, twice, other = (SQLRefineEnv(config, store=store) for _ in range(3))
        for env in (leader_env, twice, other):
            env.reset(music)
        pool.hold(until=lambda: coalescer.turns.queued() == 3)
        leader = threading.Thread(target=coalescer.step, args=(leader_env, answer(WRONG)))
        leader.start()
        assert pool.entered.wait(60)
        with ThreadPoolExecutor(3) as threads:
            calls = []
            for env, response in ((twice, answer(WRONG)), (twice, answer(GOLD)), (other, answer(GOLD))):
                calls.append(threads.submit(coalescer.step, env, response))
                while coalescer.turns.queued() < len(calls):
                    time.sleep(0.001)  # queued in this order: the first of the two turns is played first
            first, second, third = calls
            assert not first.result().info.match
            with pytest.raises(RuntimeError, match="was not planned for this episode's next turn"):
                second.result()
            assert third.result().info.match
        leader.join()
    assert pool.batches == [1, 2]  # the held batch, then one batch of the three (WRONG and GOLD once each)
