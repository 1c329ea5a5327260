"""Ambiguous questions through the environment and the TRL rollout: asking about a labelled slot gets
the intended interpretation and pays, guessing wrong costs what is configured, asking when nothing is
open costs; the simulated user is deterministic for a seed."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from progress_sql.data.embedded import ambiguous_questions, real_questions
from progress_sql.env import EnvConfig
from progress_sql.env.core import SQLRefineEnv, make_store
from progress_sql.env.records import trajectory_of
from progress_sql.env.user import SimulatedUser
from progress_sql.judge.gold import GoldStore
from progress_sql.rewards.tasks import TaskTermsConfig
from progress_sql.types import Example

#: "Show name, country, age for all singers ordered by age." (direction left out: oldest first)
AMBIGUOUS = next(e for e in ambiguous_questions() if e.difficulty == "order")
ASK = "<think>which direction?</think><ask>Should the order be from the oldest or the youngest?</ask>"
WRONG_GUESS = "<think>ascending</think><sql>SELECT name, country, age FROM singer ORDER BY age</sql>"
RIGHT = f"<think>oldest first</think><sql>{AMBIGUOUS.gold_sql}</sql>"
CONFIG = EnvConfig(max_turns=3, tasks=TaskTermsConfig(offer_ask=True, guess_wrong=-1.5))


@pytest.fixture(scope="module")
def store() -> Iterator[GoldStore]:
    with make_store(CONFIG) as gold_store:
        yield gold_store


def play(store: GoldStore, example: Example, responses: Sequence[str], seed: int = 0) -> list[Any]:
    env = SQLRefineEnv(CONFIG, store=store, user=SimulatedUser(seed))
    messages = env.reset(example)
    assert "<ask>" in messages[0]["content"]  # offer_ask: the system prompt documents the action
    steps = []
    for response in responses:
        steps.append(env.step(response))
        if steps[-1].terminated or steps[-1].truncated:
            break
    return steps


def test_asking_the_labelled_question_gets_the_interpretation_then_the_answer_matches(store: GoldStore) -> None:
    asked, answered = play(store, AMBIGUOUS, [ASK, RIGHT])
    slot = AMBIGUOUS.ambiguity[0]
    assert asked.info.action == "ask"
    assert asked.info.slot == slot.name
    assert asked.observation is not None
    assert slot.interpretation in asked.observation["content"]
    assert asked.info.turn == 1
    assert not asked.terminated
    assert answered.terminated
    assert answered.info.match
    assert answered.info.turn == 2
    reward = answered.info.reward
    assert reward is not None
    assert (reward.component("ask"), reward.component("guess")) == (0.5, 0.0)
    assert reward.version == "progressive-v2+task-terms-v1"


def test_guessing_wrong_costs_the_configured_amount(store: GoldStore) -> None:
    steps = play(store, AMBIGUOUS, [WRONG_GUESS, RIGHT])
    reward = steps[-1].info.reward
    assert steps[-1].info.match
    assert reward is not None
    assert reward.component("guess") == -1.5
    asked = play(store, AMBIGUOUS, [ASK, RIGHT])[-1].info.reward
    assert asked is not None
    assert asked.total > reward.total


def test_asking_when_nothing_is_ambiguous_costs_and_uses_a_turn(store: GoldStore) -> None:
    plain = real_questions()[0]  # "How many singers do we have?"
    asked, answered = play(store, plain, ["<think>?</think><ask>Which singers do you mean?</ask>",
                                          f"<think>all</think><sql>{plain.gold_sql}</sql>"])  # fmt: skip
    assert asked.info.slot is None
    assert asked.observation is not None
    assert "the question" in asked.observation["content"]
    assert answered.info.turn == 2
    reward = answered.info.reward
    assert reward is not None
    assert reward.component("ask") == -0.25
    assert reward.component("guess") == 0.0
    assert trajectory_of([asked.info, answered.info]).k_star == 1  # the reward's answers: the ask is not one


def test_asks_until_the_turn_limit_end_the_episode_unanswered(store: GoldStore) -> None:
    steps = play(store, AMBIGUOUS, [ASK, ASK, ASK])
    assert [s.info.slot for s in steps] == ["order", None, None]  # an answered slot is no longer open
    assert steps[-1].truncated
    assert steps[-1].info.reward is not None
    assert steps[-1].info.reward.component("ask") == 0.5 - 0.25 - 0.25


def test_the_simulated_user_is_deterministic_for_a_seed() -> None:
    questions = ["Oldest first?", "Which table?", "Do you want it sorted descending?"]
    for seed in (0, 1, 7):
        first = [SimulatedUser(seed).answer(AMBIGUOUS, q) for q in questions]
        again = [SimulatedUser(seed).answer(AMBIGUOUS, q) for q in questions]
        assert first == again
    assert [r.slot for r in first] == ["order", None, "order"]
