"""``step_many``: the turns of many episodes (a GRPO group's G samples, a rollout batch) step as one,
their SQL sent to the workers in one batch per gold store, each distinct query once; every episode
ends exactly as it would have stepped alone (records, rewards, observations)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from progress_sql.env import EnvConfig, SQLRefineEnv, step_many
from progress_sql.env.core import make_store
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool, OnResult, OnStart
from progress_sql.types import Example, ExecResult
from tests.env.conftest import GOLD
from tests.env.test_probe_protocol import WRONG, probe, solve

BROKEN = "SELECT nme FROM singer"
#: An answer under the answer protocol (the same tags as a probe under the probe protocol).
answer = probe


class CountingPool(ExecutionPool):
    """The real pool, counting the batches it is handed and the jobs in them."""

    def __init__(self) -> None:
        super().__init__(workers=1)
        self.batches: list[int] = []

    def run_many(
        self,
        jobs: Sequence[ExecJob],
        *,
        on_start: OnStart | None = None,
        on_result: OnResult | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> list[ExecResult]:
        self.batches.append(len(jobs))
        return super().run_many(jobs, on_start=on_start, on_result=on_result, meanwhile=meanwhile)


#: Per protocol, the scripts of a group: right at once, wrong then right, broken twice then out of turns,
#: no SQL, and (probe protocol) probes before the answer, a probe on the last turn (never run).
SCRIPTS: dict[str, list[list[str]]] = {
    "answer": [
        [answer(GOLD)],
        [answer(WRONG), answer(GOLD)],
        [answer(BROKEN), answer(BROKEN), answer(WRONG)],
        ["no sql here", answer(GOLD)],
        [answer(WRONG), answer(WRONG), answer(WRONG)],
    ],
    "probe": [
        [probe("SELECT count(*) FROM singer"), solve(GOLD)],
        [solve(WRONG), probe(BROKEN), solve(GOLD)],
        [probe(WRONG), probe(WRONG), probe(GOLD)],
        ["neither tag", solve(GOLD)],
    ],
}


def _reset_group(config: EnvConfig, pool: ExecutionPool, example: Example, size: int) -> list[SQLRefineEnv]:
    """``size`` environments on one store of ``pool``, each reset to ``example``."""
    store = make_store(config, pool=pool)
    envs = [SQLRefineEnv(config, store=store) for _ in range(size)]
    for env in envs:
        env.reset(example)
    return envs


def _play_alone(config: EnvConfig, store: Any, example: Example, scripts: list[list[str]]) -> list[list[Any]]:
    played = []
    for script in scripts:
        env = SQLRefineEnv(config, store=store)
        env.reset(example)
        steps = []
        for response in script:
            steps.append(env.step(response))
            if steps[-1].terminated or steps[-1].truncated:
                break
        played.append(steps)
    return played


def _play_together(config: EnvConfig, store: Any, example: Example, scripts: list[list[str]]) -> list[list[Any]]:
    envs = [SQLRefineEnv(config, store=store) for _ in scripts]
    for env in envs:
        env.reset(example)
    played: list[list[Any]] = [[] for _ in scripts]
    active = list(range(len(scripts)))
    for turn in range(config.max_turns):
        active = [i for i in active if turn < len(scripts[i])]
        for i, step in zip(active, step_many([(envs[i], scripts[i][turn]) for i in active]), strict=True):
            played[i].append(step)
        active = [i for i in active if not (played[i][-1].terminated or played[i][-1].truncated)]
    return played


@pytest.mark.parametrize("protocol", list(SCRIPTS))
def test_a_group_stepped_together_ends_as_each_episode_alone(protocol: str, music: Example) -> None:
    config = EnvConfig(max_turns=3, protocol=protocol, feedback="execution" if protocol == "probe" else "tags")
    with ExecutionPool(workers=1) as pool:
        store = make_store(config, pool=pool)
        alone = _play_alone(config, store, music, SCRIPTS[protocol])
        together = _play_together(config, store, music, SCRIPTS[protocol])
    # Records hold the elapsed time nowhere; observations, rewards and records compare whole.
    assert together == alone
    assert any(step.info.exec_status not in ("ok", "no_sql", "not_run") for steps in alone for step in steps)


def test_a_group_turn_is_one_batch_with_each_distinct_query_once(music: Example) -> None:
    config = EnvConfig(max_turns=2)
    with CountingPool() as pool:
        envs = _reset_group(config, pool, music, 8)  # the gold runs once: the other seven reuse its preparation
        pool.batches.clear()
        group = [answer(WRONG)] * 5 + [answer(BROKEN)] * 2 + ["no sql"]
        steps = step_many(list(zip(envs, group, strict=True)))
        assert pool.batches == [2]  # one batch; WRONG and BROKEN once each; no job for the turn without SQL
        assert [s.info.exec_status for s in steps] == ["ok"] * 5 + ["error"] * 2 + ["no_sql"]
        pool.batches.clear()
        for env in envs:
            env.reset(music)
            env.step(answer(WRONG))
        assert pool.batches == [1] * 8  # stepping alone: one round trip per turn


def test_a_plan_is_taken_only_by_its_own_turn(music: Example) -> None:
    config = EnvConfig(max_turns=3)
    with ExecutionPool(workers=1) as pool:
        store = make_store(config, pool=pool)
        env = SQLRefineEnv(config, store=store)
        env.reset(music)
        planned = env.plan(answer(WRONG))
        env.take(planned)
        with pytest.raises(RuntimeError, match="was not planned for this episode's next turn"):
            env.take(planned)  # the turn it was read for has been played
        with pytest.raises(ValueError, match="each environment once"):
            step_many([(env, answer(GOLD)), (env, answer(GOLD))])


def test_an_environment_with_its_own_store_steps_in_a_group(music: Example, tmp_path: Path) -> None:
    """Episodes on different stores (another config, another pool) batch per store."""
    first, second = EnvConfig(max_turns=2), EnvConfig(max_turns=2, preset="spider")
    with SQLRefineEnv(first) as a, SQLRefineEnv(second) as b:
        a.reset(music)
        b.reset(music)
        steps = step_many([(a, answer(GOLD)), (b, answer(WRONG))])
    assert [s.info.match for s in steps] == [True, False]


class RecordingPool(ExecutionPool):
    """The real pool, noting when a result reaches the parent beside the diagnoses (``events``)."""

    def __init__(self, events: list[str]) -> None:
        super().__init__(workers=1)
        self.events = events

    def run_many(self, jobs: Sequence[ExecJob], **callbacks: Any) -> list[ExecResult]:
        given: OnResult | None = callbacks.get("on_result")

        def heard(index: int, result: ExecResult) -> None:
            self.events.append("result")
            if given is not None:
                given(index, result)

        return super().run_many(jobs, **{**callbacks, "on_result": heard})


@pytest.mark.parametrize("together", [False, True], ids=["step", "step_many"])
def test_answers_are_diagnosed_while_their_sql_runs_and_once(
    music: Example, noted_diagnoses: list[str], together: bool
) -> None:
    """A turn's ODT diagnosis reads its SQL and the gold, not the result: it is made while the worker runs the
    SQL (before the result is heard), once per distinct answer, and counted to the ``odt`` stage."""
    events = noted_diagnoses
    config = EnvConfig(max_turns=2)
    with RecordingPool(events) as pool:
        envs = _reset_group(config, pool, music, 3 if together else 1)
        events.clear()
        responses = [answer(WRONG), answer(BROKEN), answer(WRONG)][: len(envs)]
        steps = step_many(list(zip(envs, responses, strict=True))) if together else [envs[0].step(responses[0])]
    assert events == ["diagnose"] * (2 if together else 1) + ["result"] * (2 if together else 1)
    assert [s.info.exec_status for s in steps] == ["ok", "error", "ok"][: len(envs)]
    assert all(env.stage_seconds["odt"] > 0 for env in envs)


def test_a_group_without_sql_is_diagnosed_without_a_batch(music: Example) -> None:
    config = EnvConfig(max_turns=2)
    with CountingPool() as pool:
        envs = _reset_group(config, pool, music, 2)
        pool.batches.clear()
        steps = step_many([(env, "no sql here") for env in envs])
    assert pool.batches == []
    assert [s.info.exec_status for s in steps] == ["no_sql", "no_sql"]
    assert all(env.stage_seconds["odt"] > 0 for env in envs)
