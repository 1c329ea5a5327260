"""An episode that only asks is scored as an episode without an answer, plus the configured costs of
its questions, the same way by the environment and from its records (verl's compute_score); the
declared reward range covers the task terms."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from progress_sql.data.embedded import ambiguous_questions, real_questions
from progress_sql.env import EnvConfig
from progress_sql.env.core import SQLRefineEnv, StepResult, make_store
from progress_sql.env.records import NO_ANSWER_TURN, trajectory_of
from progress_sql.judge.gold import GoldStore
from progress_sql.rewards.progressive import reward_range
from progress_sql.rewards.registry import RewardContext, get_reward
from progress_sql.rewards.tasks import TaskTermsConfig
from progress_sql.types import Example, Trajectory

AMBIGUOUS = next(e for e in ambiguous_questions() if e.difficulty == "order")
READ = real_questions()[0]
ASK = "<think>which way?</think><ask>Should I sort from the oldest or the youngest?</ask>"
NEEDLESS = "<think>hm</think><ask>Which table holds the singers?</ask>"
CONFIG = EnvConfig(max_turns=3, tasks=TaskTermsConfig(ask_open=0.5, ask_needless=-0.2, guess_wrong=-1.2))
#: The same with ``<ask>`` offered on every question (a read question accepts it only then).
OFFERED = replace(CONFIG, tasks=replace(CONFIG.tasks, offer_ask=True))


@pytest.fixture(scope="module")
def store() -> Iterator[GoldStore]:
    with make_store(CONFIG) as gold_store:
        yield gold_store


def play(
    store: GoldStore, example: Example, responses: list[str], config: EnvConfig = CONFIG
) -> tuple[SQLRefineEnv, list[StepResult]]:
    env = SQLRefineEnv(config, store=store)
    env.reset(example)
    return env, [env.step(response) for response in responses]


def no_answer_score(example: Example) -> dict[str, float]:
    context = RewardContext(example.gold_sql, progressive=CONFIG.progressive)
    return dict(get_reward(CONFIG.reward).score(Trajectory((NO_ANSWER_TURN,)), context).components)


@pytest.mark.parametrize(
    ("example", "asks", "terms", "config"),
    [
        # the slot once, then nothing open (an ambiguous question accepts <ask> without offer_ask)
        (AMBIGUOUS, [ASK, NEEDLESS, ASK], {"ask": 0.5 - 0.2 - 0.2, "guess": 0.0}, CONFIG),
        (READ, [NEEDLESS, NEEDLESS, ASK], {"ask": -0.6, "guess": 0.0}, OFFERED),  # nothing is ambiguous: each costs
    ],
)
def test_an_episode_that_only_asks_is_scored_as_no_answer_plus_its_questions(
    store: GoldStore, example: Example, asks: list[str], terms: dict[str, float], config: EnvConfig
) -> None:
    env, steps = play(store, example, asks, config)
    assert [(s.terminated, s.truncated) for s in steps] == [(False, False), (False, False), (False, True)]
    assert [s.reward for s in steps[:2]] == [0.0, 0.0]
    assert steps[-1].observation is None
    assert env.trajectory.turns == ()  # no answer at all
    reward = steps[-1].info.reward
    assert reward is not None
    expected = no_answer_score(example) | terms
    assert dict(reward.components) == pytest.approx(expected)
    assert reward.total == pytest.approx(sum(expected.values()))
    # The records score the same base (verl's compute_score reads them when it scores again).
    records = [s.info for s in steps]
    assert trajectory_of(records) == Trajectory((NO_ANSWER_TURN,))
    context = RewardContext(example.gold_sql, progressive=CONFIG.progressive)
    base = get_reward(CONFIG.reward).score(trajectory_of(records), context)
    assert dict(base.components) == pytest.approx(no_answer_score(example))


def test_the_value_range_covers_the_task_terms(store: GoldStore) -> None:
    low, high = CONFIG.value_range
    base_low, base_high = reward_range(CONFIG.progressive)
    # Lowest: T - 1 needless questions and a wrong first answer; highest: T questions about open slots,
    # or T - 1 and an answer passing every check.
    assert (low, high) == pytest.approx((base_low - 0.4 - 1.2, base_high + 1.5))
    _, steps = play(store, AMBIGUOUS, [NEEDLESS, NEEDLESS, "no SQL at all"])
    worst = steps[-1].reward
    assert worst == pytest.approx(base_low - 0.4 - 1.2)  # the lowest the terms can go is reached
    assert low - 1e-9 <= worst <= high
    assert reward_range(CONFIG.progressive)[0] > worst  # the base reward's own range would not cover it
