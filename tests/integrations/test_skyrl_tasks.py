"""The SkyRL environment over exported write tasks and ambiguous questions: a write episode judged by
its checks, an ambiguous one that asks (the user's reply is the next observation), and step rewards
that add up to the episode's reward with its task terms."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the SkyRL tests need the [skyrl] extra")
datasets = pytest.importorskip("datasets", reason="loading exported parquet needs datasets")

from progress_sql.data.embedded import ambiguous_questions, write_tasks  # noqa: E402
from progress_sql.export.build import export_items, write_export  # noqa: E402
from progress_sql.export.formats import get_format  # noqa: E402
from progress_sql.integrations.skyrl import close_pools, register_env  # noqa: E402

WRITE = write_tasks()[0]  # "Increase the age of every singer from France by one year."
AMBIGUOUS = next(e for e in ambiguous_questions() if e.difficulty == "order")  # oldest first
FORGETS_WHERE = "<think>everyone</think><sql>UPDATE singer SET Age = Age + 1</sql>"
ASK = "<think>which way?</think><ask>Should I sort from the oldest or the youngest?</ask>"
NEEDLESS = "<think>hm</think><ask>Which table holds the singers?</ask>"


def right(sql: str) -> str:
    return f"<think>so</think><sql>{sql}</sql>"


@pytest.fixture(scope="module", autouse=True)
def _stop_workers() -> Iterator[None]:
    yield
    close_pools()


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The write task and the ambiguous question exported as SkyRL rows (the ask action offered),
    read back the way SkyRL's PromptDataset reads a parquet file."""
    out = Path(tmp_path_factory.mktemp("skyrl_tasks")) / "train.parquet"
    items = export_items([("embedded", WRITE), ("embedded", AMBIGUOUS)], allow_ask=True)
    write_export(items, get_format("skyrl"), out)
    return [dict(row) for row in datasets.load_dataset("parquet", data_files=str(out))["train"]]


def make(row: dict[str, Any], max_turns: int = 3, **env_config: Any) -> tuple[Any, list[dict[str, str]]]:
    extras = dict(row)
    prompt, env_class = extras.pop("prompt"), extras.pop("env_class")
    extras["max_turns"] = max_turns
    register_env()
    return skyrl_gym.make(env_class, env_config=env_config, extras=extras), prompt


def test_a_write_episode_is_judged_by_its_checks(rows: list[dict[str, Any]]) -> None:
    env, prompt = make(rows[0])
    assert env.example == WRITE  # the row's task_spec carries the write spec
    opening, _ = env.init(prompt)
    assert "Task: change the database" in opening[1]["content"]
    first = env.step(FORGETS_WHERE)
    assert (first["done"], first["reward"]) == (False, 0.0)
    assert (first["metadata"]["checks_passed"], first["metadata"]["checks_total"]) == (1, 3)
    assert "DML_WHERE_MISSING" in first["metadata"]["tags"]
    assert "WHERE" in first["observations"][0]["content"]
    second = env.step(right(WRITE.gold_sql))
    assert second["done"] is True
    assert second["metadata"]["match"] is True
    components = second["metadata"]["reward"]["components"]
    assert components["checks"] == pytest.approx(0.5)  # omega_checks times every check passed
    assert second["reward"] == pytest.approx(second["metadata"]["reward"]["total"])
    assert env.get_metrics()["match"] is True


def test_an_ambiguous_episode_asks_then_answers(rows: list[dict[str, Any]]) -> None:
    env, prompt = make(rows[1])
    assert env.example == AMBIGUOUS
    opening, _ = env.init(prompt)
    assert "<ask>" in opening[0]["content"]  # exported with the action offered
    asked = env.step(ASK)
    assert (asked["done"], asked["reward"]) == (False, 0.0)
    assert asked["metadata"]["action"] == "ask"
    assert asked["metadata"]["slot"] == AMBIGUOUS.ambiguity[0].name
    assert AMBIGUOUS.ambiguity[0].interpretation in asked["observations"][0]["content"]
    answered = env.step(right(AMBIGUOUS.gold_sql))
    assert answered["done"] is True
    assert answered["metadata"]["match"] is True
    assert answered["metadata"]["reward"]["components"]["ask"] == 0.5
    assert env.get_metrics() == {"turns": 1, "asks": 1, "match": True, "k_star": 1, "reward": answered["reward"]}


def test_step_rewards_add_up_with_the_task_terms(rows: list[dict[str, Any]]) -> None:
    actions = [NEEDLESS, ASK, right(AMBIGUOUS.gold_sql)]
    final, _ = make(rows[1])
    final.init([])
    last = [final.step(a) for a in actions][-1]
    stepped, _ = make(rows[1], step_rewards=True)
    stepped.init([])
    per_step = [stepped.step(a)["reward"] for a in actions]
    assert sum(per_step) == pytest.approx(last["reward"])
    assert last["metadata"]["reward"]["components"]["ask"] == pytest.approx(0.5 - 0.25)


def test_an_episode_that_only_asks_ends_at_the_budget_as_no_answer(rows: list[dict[str, Any]]) -> None:
    env, prompt = make(rows[1], max_turns=2)
    env.init(prompt)
    assert env.step(ASK)["done"] is False
    last = env.step(NEEDLESS)
    assert last["done"] is True
    assert last["observations"] == []
    reward = last["metadata"]["reward"]
    # One turn without an answer (the progressive defaults: exec -0.5, align -0.1), then the questions.
    assert reward["components"] == pytest.approx(
        {"fmt": 0.0, "exec": -0.5, "late": 0.0, "align": -0.1, "ask": 0.25, "guess": 0.0}
    )
    assert last["reward"] == pytest.approx(-0.35)
    low, high = env.config.value_range
    assert low <= last["reward"] <= high
