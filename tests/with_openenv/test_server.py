"""The OpenEnv server through OpenEnv's own server and client code: a real uvicorn process serving
OpenEnv's app over exported rows on a real SQLite database, driven by our ``EnvClient`` subclass (its
WebSocket sessions), by raw OpenEnv protocol messages, and by OpenEnv's HTTP routes."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("openenv", reason="the OpenEnv tests need the [openenv] extra (docs/openenv.md)")

import requests
from websockets.sync.client import connect

from progress_sql.integrations.openenv import ProgressSQLEnvClient, SQLAction
from tests.with_openenv.conftest import ENDLESS, FAILING_GOLD_INDEX, RIGHT, TIMEOUT_S, WRONG


def test_a_multi_turn_episode_with_odt_feedback_then_a_match(server: str) -> None:
    with ProgressSQLEnvClient(base_url=server).sync() as env:
        opening = env.reset(index=0)
        assert (opening.done, opening.reward) == (False, None)
        assert [m["role"] for m in opening.observation.messages] == ["system", "user"]
        assert "CREATE TABLE singer" in opening.observation.messages[1]["content"]
        assert opening.observation.episode == {"index": 0, "db_id": "music", "max_turns": 3,
                                               "gold_error": "", "database_error": ""}  # fmt: skip

        first = env.step(SQLAction(response=WRONG))
        assert (first.done, first.reward) == (False, 0.0)
        [feedback] = first.observation.messages
        assert feedback["role"] == "user"
        assert feedback["content"].startswith("Feedback:")
        assert "WHERE" in feedback["content"]  # the ODT names the missing filter
        record = first.observation.metadata  # the turn's record, as metadata on the client's side
        assert (record["match"], record["exec_status"], record["feedback"]) == (False, "ok", feedback["content"])
        assert first.observation.metrics == {}

        last = env.step(RIGHT)  # the reply's text is accepted as well as an SQLAction
        assert last.done is True
        assert last.observation.messages == []
        assert last.observation.metadata["match"] is True
        assert last.reward == pytest.approx(last.observation.metadata["reward"]["total"])
        assert last.reward > 0
        assert set(last.observation.metadata["reward"]["components"]) >= {"align", "exec"}
        assert last.observation.metrics == {"turns": 2, "asks": 0, "match": True, "k_star": 2,
                                            "reward": last.reward}  # fmt: skip

        state = env.state()
        assert (state.index, state.db_id, state.step_count, state.done, state.max_turns) == (0, "music", 2, True, 3)
        assert state.metrics["match"] is True
        assert state.episode_id


def test_a_failing_gold_is_scored_zero_and_marked(server: str) -> None:
    with ProgressSQLEnvClient(base_url=server).sync() as env:
        opening = env.reset(index=FAILING_GOLD_INDEX)
        assert "nowhere" in opening.observation.episode["gold_error"]
        # the episode has no opening of its own: the model sees the exported prompt, so it can reply
        assert [m["role"] for m in opening.observation.messages] == ["system", "user"]
        step = env.step(RIGHT)
        assert (step.done, step.reward, step.observation.messages) == (True, 0.0, [])
        assert step.observation.metadata["stop"] == "gold_invalid"
        assert step.observation.metadata["gold_error"] == opening.observation.episode["gold_error"]


def test_a_seed_chooses_the_same_row_and_a_new_reset_starts_over(server: str) -> None:
    with ProgressSQLEnvClient(base_url=server).sync() as env:
        first = env.reset(seed=7).observation.episode["index"]
        env.step(WRONG)
        again = env.reset(seed=7)
        assert again.observation.episode["index"] == first
        assert env.state().step_count == 0


def exchange(url: str, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    """Send OpenEnv protocol messages over one WebSocket session; return the answers."""
    with connect(url.replace("http://", "ws://") + "/ws") as socket:
        answers = []
        for message in messages:
            socket.send(json.dumps(message))
            answers.append(json.loads(socket.recv(timeout=60)))
        return answers


def test_bad_requests_get_openenvs_error_shape_and_the_session_goes_on(server: str) -> None:
    unknown_field, wrong_type, before_reset, bad_keyword, bad_index, reset, good = exchange(
        server,
        {"type": "step", "data": {"response": RIGHT, "sql": "SELECT 1"}},
        {"type": "step", "data": {"response": 42}},
        {"type": "step", "data": {"response": RIGHT}},
        {"type": "reset", "data": {"row": 0}},
        {"type": "reset", "data": {"index": 99}},
        {"type": "reset", "data": {"index": 0}},
        {"type": "step", "data": {"response": RIGHT}},
    )
    # OpenEnv's WSErrorResponse (openenv/core/env_server/types.py): {"type": "error", "data": {message, code, ...}}
    assert unknown_field["type"] == "error"
    assert unknown_field["data"]["code"] == "VALIDATION_ERROR"
    assert [(e["type"], e["loc"]) for e in unknown_field["data"]["errors"]] == [("extra_forbidden", ["sql"])]
    assert wrong_type["data"]["code"] == "VALIDATION_ERROR"
    assert [(e["type"], e["loc"]) for e in wrong_type["data"]["errors"]] == [("string_type", ["response"])]
    assert (before_reset["type"], before_reset["data"]["code"]) == ("error", "EXECUTION_ERROR")
    assert "step before reset" in before_reset["data"]["message"]
    assert bad_keyword["data"]["code"] == "EXECUTION_ERROR"
    assert "unknown reset keywords: row" in bad_keyword["data"]["message"]
    assert "index 99 is outside the 2 rows" in bad_index["data"]["message"]
    assert reset["type"] == "observation"
    assert (good["type"], good["data"]["done"]) == ("observation", True)  # the session survived every error
    assert good["data"]["reward"] > 0


def test_http_routes_answer_as_openenv_defines_them(server: str) -> None:
    wrong_type = requests.post(f"{server}/step", json={"action": {"response": 1}}, timeout=30)
    assert wrong_type.status_code == 422  # OpenEnv's HTTP shape: FastAPI's {"detail": [pydantic errors]}
    assert [(e["type"], e["loc"]) for e in wrong_type.json()["detail"]] == [("string_type", ["response"])]
    reset = requests.post(f"{server}/reset", json={"index": 0}, timeout=60)  # stateless: a one-call episode
    assert reset.status_code == 200
    assert [m["role"] for m in reset.json()["observation"]["messages"]] == ["system", "user"]
    schema = requests.get(f"{server}/schema", timeout=30).json()
    assert schema["action"]["required"] == ["response"]
    assert {"messages", "record", "episode", "metrics"} <= set(schema["observation"]["properties"])
    assert requests.get(f"{server}/metadata", timeout=30).json()["name"] == "progress_sql"


@dataclass(frozen=True)
class Timed:
    """One episode over its own WebSocket session: when it started and ended, its last result."""

    started: float
    ended: float
    last: Any

    @property
    def latency(self) -> float:
        return self.ended - self.started


async def play(server: str, replies: list[str]) -> Timed:
    async with ProgressSQLEnvClient(base_url=server, message_timeout_s=TIMEOUT_S * 6) as env:
        started = time.monotonic()
        result = await env.reset(index=0)
        for reply in replies:
            result = await env.step(SQLAction(response=reply))
            if result.done:
                break
        return Timed(started, time.monotonic(), result)


def test_32_episodes_at_once_and_a_pathological_query_stalls_none_of_the_others(server: str) -> None:
    async def all_at_once() -> list[Timed]:
        slow = play(server, [ENDLESS])
        return await asyncio.gather(slow, *(play(server, [WRONG, RIGHT]) for _ in range(31)))

    slow, *others = asyncio.run(all_at_once())
    assert slow.last.observation.metadata["exec_status"] == "timeout"  # a model's mistake is data
    assert slow.latency >= TIMEOUT_S  # it really ran until the executor's limit
    assert all(o.last.done and o.last.observation.metadata["match"] for o in others)
    # none of the others waited for it: each ended before the slow query could have been stopped
    deadline = slow.started + TIMEOUT_S
    assert [o for o in others if o.ended >= deadline] == []
    assert max(o.latency for o in others) < TIMEOUT_S
