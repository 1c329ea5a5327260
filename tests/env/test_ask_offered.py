"""``<ask>`` is an action only where it is offered: on an ambiguous question, or on any question when
the prompt offers it (``TaskTermsConfig.offer_ask``, or an exported row's prompt). Elsewhere a response
that asks is an answer without SQL: a format failure, scored exactly as any response without SQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from progress_sql.data.embedded import ambiguous_questions, real_questions, write_tasks
from progress_sql.env import EnvConfig
from progress_sql.env.core import SQLRefineEnv, StepResult, ask_offered, make_store
from progress_sql.export.build import export_items
from progress_sql.export.formats import FORMATS, row_env_config
from progress_sql.judge.gold import GoldStore
from progress_sql.rewards.progressive import is_attempt
from progress_sql.rewards.tasks import TaskTermsConfig
from progress_sql.sql.extract import NOT_OFFERED, extract
from progress_sql.types import Example

READ = real_questions()[0]  # "How many singers do we have?"
WRITE = write_tasks()[0]
AMBIGUOUS = next(e for e in ambiguous_questions() if e.difficulty == "order")  # oldest first
ASK = "<think>which singers?</think><ask>Should I count every singer, or only some?</ask>"
NO_SQL = "<think>which singers?</think>"  # an answer without SQL, as the paper's environment sees any
CONFIG = EnvConfig(max_turns=3)  # offer_ask off: the default
OFFERED = replace(CONFIG, tasks=TaskTermsConfig(offer_ask=True))


@pytest.fixture(scope="module")
def store() -> Iterator[GoldStore]:
    with make_store(CONFIG) as gold_store:
        yield gold_store


def play(store: GoldStore, example: Example, responses: list[str], config: EnvConfig = CONFIG) -> list[StepResult]:
    env = SQLRefineEnv(config, store=store)
    env.reset(example)
    return [env.step(response) for response in responses]


def test_ask_is_offered_by_an_ambiguous_task_or_by_the_prompt() -> None:
    assert [ask_offered(e, CONFIG) for e in (READ, WRITE, AMBIGUOUS)] == [False, False, True]
    assert [ask_offered(e, OFFERED) for e in (READ, WRITE, AMBIGUOUS)] == [True, True, True]


@pytest.mark.parametrize("example", [READ, WRITE], ids=["read", "write"])
def test_an_ask_where_none_is_offered_is_an_answer_without_sql(store: GoldStore, example: Example) -> None:
    right = f"<think>so</think><sql>{example.gold_sql}</sql>"
    asked, answered = play(store, example, [ASK, right])
    without_sql, answered_after = play(store, example, [NO_SQL, right])
    record = asked.info
    assert (record.action, record.question, record.slot) == ("sql", None, None)  # no question was asked
    assert (record.sql, record.format_ok, record.format_problem) == (None, False, NOT_OFFERED)
    assert (record.exec_status, record.verdict, record.turn) == ("no_sql", "no_sql", 1)
    assert record.checks_passed == without_sql.info.checks_passed  # a write task: 0 of its checks, as no SQL
    # No user reply: the next message is the ODT feedback an answer without SQL gets.
    assert asked.observation == without_sql.observation
    assert asked.observation is not None
    assert "User:" not in asked.observation["content"]
    # The reward and the attempt count are those of an answer without SQL: no ask term, k* = 2.
    assert answered.info.match
    assert answered.info.turn == 2
    reward, reference = answered.info.reward, answered_after.info.reward
    assert reward is not None
    assert reference is not None
    assert reward.to_dict() == reference.to_dict()
    assert dict(reward.components).get("ask", 0.0) == 0.0
    first = SQLRefineEnv(CONFIG, store=store)
    first.reset(example)
    first.step(ASK)
    (turn,) = first.trajectory.turns
    assert not is_attempt(turn)
    assert (turn.sql, turn.format_ok, turn.executable) == (None, False, False)


def test_the_same_ask_is_a_question_where_offered(store: GoldStore) -> None:
    (on_read,) = play(store, READ, [ASK], OFFERED)  # the prompt offers it: a needless question
    assert (on_read.info.action, on_read.info.slot, on_read.info.exec_status) == ("ask", None, "ask")
    assert on_read.observation is not None
    assert on_read.observation["content"].startswith("User: ")
    order = "<think>which way?</think><ask>Should I sort from the oldest or the youngest?</ask>"
    (on_ambiguous,) = play(store, AMBIGUOUS, [order])  # the task offers it, without offer_ask
    assert (on_ambiguous.info.action, on_ambiguous.info.slot) == ("ask", "order")
    assert on_ambiguous.observation is not None
    assert AMBIGUOUS.ambiguity[0].interpretation in on_ambiguous.observation["content"]


def test_nothing_is_recovered_from_an_ask_that_is_not_offered() -> None:
    fenced = "<think>t</think><ask>Do you mean ```sql\nSELECT count(*) FROM singer\n```?</ask>"
    assert extract(fenced) == extract(ASK) == extract(ASK, reasoning=False)
    assert (extract(fenced).sql, extract(fenced).format_ok, extract(fenced).problem) == (None, False, NOT_OFFERED)
    assert extract(ASK, ask=True).ask == "Should I count every singer, or only some?"


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_row_exported_with_the_ask_offered_offers_it_to_the_trainers_environment(name: str) -> None:
    offered, plain = (export_items([("embedded", READ)], allow_ask=allow)[0] for allow in (True, False))
    assert "<ask>" in offered.messages[0]["content"]
    assert "<ask>" not in plain.messages[0]["content"]
    fmt = FORMATS[name]
    offered_row, plain_row = fmt.row(offered, 0), fmt.row(plain, 0)
    assert row_env_config(CONFIG, offered_row).tasks.offer_ask  # the trainer's env accepts what the prompt invites
    assert row_env_config(CONFIG, plain_row) == CONFIG
    assert row_env_config(OFFERED, plain_row) == OFFERED  # the run's own setting still offers it
    assert fmt.example(offered_row) == fmt.example(plain_row)
