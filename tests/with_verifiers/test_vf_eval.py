"""The environment through ``vf-eval`` itself (verifiers 0.4.0's CLI, its eval runner, its tool-less chat
harness and interception server) against a real OpenAI-compatible HTTP endpoint that answers scripted
SQL: exported rows in, ``traces.jsonl`` out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.with_verifiers.chat_server import MODEL, ChatServer, serving
from tests.with_verifiers.support import (
    COUNT,
    FRANCE,
    TASKSET_ID,
    music_examples,
    scripted_answer,
    traces,
    vf_eval,
    write_rows,
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vf_eval")


@pytest.fixture(scope="module")
def rows(folder: Path) -> Path:
    """The France question, the count question, and the count question again with a gold that fails."""
    france, count = music_examples(folder)
    return write_rows(folder, [france, count, count], broken_gold=2)


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with serving(scripted_answer) as server:
        yield server


def eval_args(rows: Path, chat: ChatServer, out: Path, *extra: str) -> list[str]:
    return [TASKSET_ID, "--env.taskset.rows", str(rows), "--model", MODEL, "--client.base-url", chat.base_url,
            "--client.api-key-var", "SCRIPTED_SQL_KEY", "--no-push", "--no-rich", "-o", str(out), "--run.name", "t",
            *extra]  # fmt: skip


@pytest.fixture(scope="module")
def run(rows: Path, chat: ChatServer, folder: Path) -> list[dict[str, Any]]:
    out = folder / "outputs"
    done = vf_eval(eval_args(rows, chat, out, "--env.taskset.settings", '{"max_turns": 3}'), folder)
    assert done.returncode == 0, done.stderr[-4000:]
    return traces(out)


def by_question(run: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each trace under (question, its row's gold)."""
    return {(t["task"]["data"]["name"], t["task"]["data"]["row"]["gold_sql"]): t for t in run}


def test_feedback_then_a_match_is_a_multi_turn_episode(run: list[dict[str, Any]], chat: ChatServer) -> None:
    (france,) = [t for t in run if t["task"]["data"]["name"] == FRANCE]
    summary = france["info"]["progress_sql"]
    first, second = summary["turns"]
    assert (first["match"], first["exec_status"], second["match"]) == (False, "ok", True)
    assert first["feedback"].startswith("Feedback:")
    assert "WHERE" in first["feedback"]
    # the feedback reached the model as the next user turn of the same conversation
    asked = [r["messages"] for r in chat.requests if FRANCE in str(r["messages"][1]["content"])]
    follow_up = [m for m in asked if sum(x["role"] == "assistant" for x in m) == 1]
    assert follow_up
    assert follow_up[0][-1] == {"role": "user", "content": first["feedback"]}
    assert summary["done"]
    assert france["ok"], (france["stop_condition"], [e["message"] for e in france["errors"]])
    reward = france["rewards"]["progress_reward"]
    assert reward["weight"] == 1.0
    assert reward["score"] == pytest.approx(second["reward"]["total"])
    assert reward["score"] > 0
    metrics = france["metrics"]
    assert (metrics["match"], metrics["k_star"], metrics["turns"], metrics["unscored"]) == (1.0, 2.0, 2.0, 0.0)
    # the reward's components are metrics (reported, not summed into the reward)
    components = {k[len("reward_") :]: v for k, v in metrics.items() if k.startswith("reward_")}
    assert components == pytest.approx(second["reward"]["components"])
    assert {"align", "exec"} <= set(components)
    assert metrics["format_ok"] == 1.0
    assert metrics["f"] == pytest.approx(second["f"])


def test_a_first_answer_match_ends_after_one_turn(run: list[dict[str, Any]]) -> None:
    count = by_question(run)[(COUNT, "SELECT count(*) FROM singer")]
    assert [t["match"] for t in count["info"]["progress_sql"]["turns"]] == [True]
    assert (count["metrics"]["match"], count["metrics"]["k_star"]) == (1.0, 1.0)
    assert count["rewards"]["progress_reward"]["score"] > 0


def test_a_failing_gold_is_scored_zero_and_marked(run: list[dict[str, Any]]) -> None:
    broken = by_question(run)[(COUNT, "SELECT nme FROM nowhere")]
    summary = broken["info"]["progress_sql"]
    assert summary["stop"] == "gold_invalid"
    assert "nowhere" in summary["marks"]["gold_error"]
    assert summary["turns"] == []
    assert summary["unscored"] is True
    assert broken["rewards"]["progress_reward"]["score"] == 0.0
    assert (broken["metrics"]["unscored"], broken["metrics"]["match"]) == (1.0, 0.0)
    assert broken["ok"]  # data for the trainer, not a failed rollout


def test_an_unknown_setting_is_refused_by_the_cli(rows: Path, chat: ChatServer, folder: Path) -> None:
    out = folder / "refused"
    done = vf_eval(eval_args(rows, chat, out, "--env.taskset.settings", '{"max_turnz": 3}'), folder, timeout=120)
    assert done.returncode != 0
    assert "max_turnz" in done.stderr + done.stdout
    assert not list(out.rglob("traces.jsonl"))


def test_an_unknown_taskset_argument_is_refused_by_the_cli(rows: Path, chat: ChatServer, folder: Path) -> None:
    done = vf_eval(eval_args(rows, chat, folder / "refused2", "--env.taskset.rowz", "x"), folder, timeout=120)
    assert done.returncode != 0
    assert "rowz" in done.stderr + done.stdout
