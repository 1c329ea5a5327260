"""Write tasks and clarifying questions over the OpenEnv server: exported TRL rows (the ask action
offered) of an embedded write task and an ambiguous question, played by the client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="the OpenEnv tests need the [openenv] extra (docs/openenv.md)")

from progress_sql.data.embedded import ambiguous_questions, write_tasks
from progress_sql.export.build import export_items
from progress_sql.export.formats import build_rows, get_format
from progress_sql.integrations.openenv import ProgressSQLEnvClient, SQLAction, build_app
from tests.with_openenv import serving
from tests.with_openenv.conftest import SETTINGS

WRITE = write_tasks()[0]  # "Increase the age of every singer from France by one year."
AMBIGUOUS = next(e for e in ambiguous_questions() if e.difficulty == "order")  # oldest first
FORGETS_WHERE = "<think>everyone</think><sql>UPDATE singer SET Age = Age + 1</sql>"
ASK = "<think>which way?</think><ask>Should I sort from the oldest or the youngest?</ask>"


def right(sql: str) -> str:
    return f"<think>so</think><sql>{sql}</sql>"


@pytest.fixture(scope="module")
def tasks_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    rows = build_rows(export_items([("embedded", WRITE), ("embedded", AMBIGUOUS)], allow_ask=True), get_format("trl"))
    out = Path(tmp_path_factory.mktemp("openenv_tasks")) / "train.jsonl"
    out.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with serving.in_process(build_app(out, SETTINGS)) as url:
        yield url


def test_a_write_episode_is_judged_by_its_checks(tasks_server: str) -> None:
    with ProgressSQLEnvClient(base_url=tasks_server).sync() as env:
        opening = env.reset(index=0)
        assert "Task: change the database" in opening.observation.messages[1]["content"]
        first = env.step(FORGETS_WHERE)
        assert (first.done, first.reward) == (False, 0.0)
        record = first.observation.metadata
        assert (record["checks_passed"], record["checks_total"]) == (1, 3)
        assert "DML_WHERE_MISSING" in record["tags"]
        assert "WHERE" in first.observation.messages[0]["content"]
        second = env.step(SQLAction(response=right(WRITE.gold_sql)))
        assert second.done is True
        assert second.observation.metadata["match"] is True
        assert second.observation.metadata["reward"]["components"]["checks"] == pytest.approx(0.5)


def test_an_ambiguous_episode_asks_then_answers(tasks_server: str) -> None:
    with ProgressSQLEnvClient(base_url=tasks_server).sync() as env:
        opening = env.reset(index=1)
        assert "<ask>" in opening.observation.messages[0]["content"]  # exported with the action offered
        asked = env.step(ASK)
        assert (asked.done, asked.reward) == (False, 0.0)
        assert asked.observation.metadata["action"] == "ask"
        assert asked.observation.metadata["slot"] == AMBIGUOUS.ambiguity[0].name
        assert AMBIGUOUS.ambiguity[0].interpretation in asked.observation.messages[0]["content"]
        answered = env.step(right(AMBIGUOUS.gold_sql))
        assert answered.done is True
        assert answered.observation.metadata["reward"]["components"]["ask"] == 0.5
        assert answered.observation.metrics == {"turns": 1, "asks": 1, "match": True, "k_star": 1,
                                                "reward": answered.reward}  # fmt: skip
