"""The ``probe`` protocol: probes run under the executor's limits, are observed and never judged, use
a turn each and are no attempt; the progressive reward scores the answers alone (Y), k* counts answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env.core import make_store
from progress_sql.env.records import NO_ANSWER_TURN, trajectory_of
from progress_sql.errors import ConfigError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.gold import GoldStore
from progress_sql.rewards.progressive import progressive_reward
from progress_sql.types import Example, Trajectory
from tests.env.conftest import GOLD

WRONG = "SELECT name FROM singer WHERE country = 'France'"
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def probe(sql: str) -> str:
    return f"<think>look</think><sql>{sql}</sql>"


def solve(sql: str) -> str:
    return f"<think>answer</think><solution>{sql}</solution>"


@pytest.fixture(scope="module")
def store(pool: ExecutionPool) -> GoldStore:
    return make_store(EnvConfig(timeout_s=1.0), pool=pool)


def _episode(config: EnvConfig, store: GoldStore, example: Example, responses: list[str]) -> SQLRefineEnv:
    env = SQLRefineEnv(config, store=store)
    env.reset(example)
    for response in responses:
        step = env.step(response)
        if step.terminated or step.truncated:
            break
    return env


def test_probes_are_observed_never_judged_and_answers_are_the_attempts(music: Example, store: GoldStore) -> None:
    config = EnvConfig(protocol="probe", feedback="execution", max_turns=6, timeout_s=1.0)
    env = SQLRefineEnv(config, store=store)
    opening = env.reset(music)
    assert "<solution>" in opening[0]["content"]
    assert "<sql>" in opening[0]["content"]
    steps = [env.step(r) for r in (probe(GOLD), probe(ENDLESS), solve(WRONG), probe("SELECT 1"), solve(GOLD))]
    records = [s.info for s in steps]
    assert [r.action for r in records] == ["probe", "probe", "sql", "probe", "sql"]
    assert [r.match for r in records] == [False, False, False, False, True]  # the gold as a probe is no answer
    assert records[0].verdict == "probe"
    assert records[0].tags == ()
    assert records[1].exec_status == "timeout"  # a probe runs under the executor's limits
    assert steps[0].observation is not None
    assert steps[0].observation["content"].startswith("<observation>Your query returned 2 row(s); first rows:")
    assert steps[0].observation["content"].endswith("You have 5 turn(s) left.")
    assert steps[2].observation is not None  # the wrong answer gets the feedback kind's text, the episode goes on
    assert steps[2].observation["content"].startswith("Execution: Your query returned 4 row(s)")
    assert steps[2].observation["content"].endswith("<solution>...</solution>.")
    assert steps[-1].terminated
    assert steps[-1].observation is None
    # Y is the two answers: k* = 2, and the reward is the progressive reward of those two turns.
    answers = env.trajectory
    assert [t.sql for t in answers.turns] == [WRONG, GOLD]
    assert answers.k_star == 2
    assert trajectory_of(records) == answers
    assert records[-1].reward == progressive_reward(answers, config.progressive)


def test_the_budget_counts_every_turn_and_a_last_probe_is_not_run(music: Example, store: GoldStore) -> None:
    config = EnvConfig(protocol="probe", max_turns=3, timeout_s=1.0)
    env = SQLRefineEnv(config, store=store)
    env.reset(music)
    steps = [env.step(probe(sql)) for sql in ("SELECT 1", "SELECT 2", ENDLESS)]
    assert [(s.terminated, s.truncated) for s in steps] == [(False, False), (False, False), (False, True)]
    assert (steps[-1].info.exec_status, steps[-1].observation) == ("not_run", None)
    assert env.trajectory.turns == ()  # no answer: scored as one turn without an answer, as an ask-only episode
    assert steps[-1].info.reward == progressive_reward(Trajectory((NO_ANSWER_TURN,)), config.progressive)


def test_a_response_with_neither_tag_is_an_answer_without_sql(music: Example, store: GoldStore) -> None:
    env = SQLRefineEnv(EnvConfig(protocol="probe", timeout_s=1.0), store=store)
    env.reset(music)
    step = env.step("I would rather not say.")
    assert (step.info.action, step.info.sql, step.info.format_ok) == ("sql", None, False)
    assert step.info.format_problem == "neither a <sql> probe nor a <solution> answer"
    assert len(env.trajectory.turns) == 1


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown turn protocol 'tools'; choose one of answer, probe, skyrl"):
        EnvConfig(protocol="tools")


def test_the_answer_protocol_is_unchanged_by_default(music: Example, store: GoldStore) -> None:
    env = _episode(EnvConfig(timeout_s=1.0), store, music, [probe(WRONG), probe(GOLD)])
    assert [t.match for t in env.trajectory.turns] == [False, True]  # <sql> is the answer, as before
    assert Path(music.db_path).is_file()
