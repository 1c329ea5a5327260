"""The resources server over real HTTP, called with NeMo Gym's own ``ServerClient``: ``/verify`` scores
one answer (a match; a wrong answer with the reward's components and the ODT's findings; a failing gold
scored 0 and marked), a malformed row gets FastAPI's validation error, ``/reset`` and ``/step`` host
a multi-turn episode with ODT feedback, and 32 verify calls at once with one endless query do not
wait for it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from progress_sql.integrations.nemo_gym.rows import REQUEST_FIELD
from tests.with_nemo_gym.conftest import ENDLESS, RIGHT, WRONG, Served, model_response


def verify_body(row: dict[str, Any], text: str, **changes: Any) -> dict[str, Any]:
    """What an agent sends to ``/verify``: the dataset row with the model's response."""
    return {**row, "response": model_response(text), **changes}


def test_a_match_scores_the_episode_reward(served: Served) -> None:
    status, body, _ = served.run(served.post("/verify", verify_body(served.rows[0], RIGHT)))
    assert status == 200, body
    assert body["match"] is True
    assert body["exec_status"] == "ok"
    assert body["reward"] > 0
    assert body["reward"] == pytest.approx(body["turn"]["reward"]["total"])
    assert set(body["reward_components"]) >= {"align", "exec"}
    assert body["mask_sample"] is False
    assert body["failure_kind"] is None
    assert body["response"]["output"][0]["content"][0]["text"] == RIGHT  # NeMo Gym echoes the request
    assert body["db_id"] == "music"


def test_a_wrong_answer_scores_less_with_the_odt_findings(served: Served) -> None:
    async def both() -> list[tuple[int, Any, Any]]:
        return list(
            await asyncio.gather(
                served.post("/verify", verify_body(served.rows[0], RIGHT)),
                served.post("/verify", verify_body(served.rows[0], WRONG)),
            )
        )

    (_, right, _), (status, wrong, _) = served.run(both())
    assert status == 200, wrong
    assert (wrong["match"], wrong["exec_status"]) == (False, "ok")
    assert wrong["reward"] < right["reward"]
    assert wrong["reward_components"].keys() == right["reward_components"].keys()
    assert 0.0 < wrong["f"] < 1.0  # the ODT's partial credit: right table and column, filter missing
    assert wrong["turn"]["verdict"]
    assert wrong["turn"]["tags"]
    assert wrong["turn"]["sql"] == "SELECT name FROM singer"


def test_a_failing_gold_is_scored_zero_and_masked(served: Served) -> None:
    row = {**served.rows[0], "gold_sql": "SELECT nme FROM nowhere"}
    status, body, _ = served.run(served.post("/verify", verify_body(row, RIGHT)))
    assert status == 200, body
    assert (body["reward"], body["match"]) == (0.0, False)
    assert body["mask_sample"] is True
    assert body["failure_kind"] == "progress_sql:gold_invalid"
    assert "nowhere" in body["failure_reason"]
    assert body["turn"]["stop"] == "gold_invalid"


def test_a_missing_database_is_scored_zero_and_masked(served: Served) -> None:
    status, body, _ = served.run(served.post("/verify", verify_body(served.rows[1], "<sql>SELECT 1</sql>")))
    assert status == 200, body
    assert (body["reward"], body["mask_sample"]) == (0.0, True)
    assert body["failure_kind"] == "progress_sql:database_error"
    assert "database not found" in body["failure_reason"]


def test_a_malformed_row_gets_fastapis_error_shape(served: Served) -> None:
    row = {k: v for k, v in served.rows[0].items() if k != "gold_sql"}
    status, body, _ = served.run(served.post("/verify", verify_body(row, RIGHT)))
    assert status == 422
    assert [(e["type"], e["loc"]) for e in body["detail"]] == [("missing", ["body", "gold_sql"])]
    status, body, _ = served.run(served.post("/verify", {"response": model_response(RIGHT)}))
    assert status == 422
    assert {tuple(e["loc"]) for e in body["detail"]} >= {("body", REQUEST_FIELD), ("body", "gold_sql")}
    status, body, _ = served.run(served.post("/verify", verify_body(served.rows[0], RIGHT, task_spec="{")))
    assert status == 422
    assert "task_spec" in body["detail"]
    status, body, _ = served.run(served.post("/reset", {k: v for k, v in served.rows[0].items() if k != "db_path"}))
    assert status == 422
    assert "lacks db_path" in body["detail"]


def test_a_multi_turn_episode_gets_odt_feedback_then_ends_on_a_match(served: Served) -> None:
    """What ``gymnasium_agent`` does: /reset with the row, then /step with each model response, the
    session cookie of the reset carried."""

    async def episode() -> list[tuple[int, Any]]:
        status, reset, cookies = await served.post("/reset", dict(served.rows[0]))
        assert status == 200, reset
        session = {key: morsel.value for key, morsel in cookies.items()}
        steps = [(status, reset)]
        for text in (WRONG, RIGHT):
            status, step, _ = await served.post("/step", verify_body(served.rows[0], text), cookies=session)
            steps.append((status, step))
        status, after, _ = await served.post("/step", verify_body(served.rows[0], RIGHT), cookies=session)
        steps.append((status, after))
        return steps

    (_, reset), (s1, first), (s2, second), (s3, after) = served.run(episode())
    assert reset["observation"] is None  # the row's prompt is the environment's opening
    assert reset["info"] == {"db_id": "music", "max_turns": 3, "gold_error": "", "database_error": ""}
    assert (s1, first["terminated"], first["truncated"], first["reward"]) == (200, False, False, 0.0)
    assert first["observation"].startswith("Feedback:")
    assert "WHERE" in first["observation"]  # the ODT names the missing filter
    assert first["info"]["feedback"] == first["observation"]
    assert (s2, second["observation"], second["terminated"], second["truncated"]) == (200, None, True, False)
    assert second["info"]["match"] is True
    assert second["reward"] == pytest.approx(second["info"]["reward"]["total"])
    assert second["reward"] > 0
    assert second["info"]["episode"] == {"turns": 2, "asks": 0, "match": True, "k_star": 2,
                                         "reward": second["reward"]}  # fmt: skip
    assert s3 == 409
    assert "reset" in after["detail"]


def test_the_turn_budget_truncates_an_episode_without_a_match(served: Served) -> None:
    async def episode() -> list[Any]:
        _, _, cookies = await served.post("/reset", dict(served.rows[0]))
        session = {key: morsel.value for key, morsel in cookies.items()}
        return [(await served.post("/step", verify_body(served.rows[0], WRONG), cookies=session))[1] for _ in range(3)]

    steps = served.run(episode())
    assert [(s["terminated"], s["truncated"]) for s in steps] == [(False, False), (False, False), (False, True)]
    assert steps[-1]["info"]["episode"]["match"] is False


def test_32_verifies_at_once_are_not_held_up_by_an_endless_query(served: Served) -> None:
    """One request runs an unbounded recursive CTE (killed at the server's 2 s ``timeout_s``); the 31
    others, answered by the other workers, all return before it."""

    async def timed(text: str) -> tuple[float, dict[str, Any]]:
        status, body, _ = await served.post("/verify", verify_body(served.rows[0], text))
        assert status == 200, body
        return time.monotonic(), body

    async def burst() -> list[tuple[float, dict[str, Any]]]:
        texts = [ENDLESS] + [RIGHT if i % 2 else WRONG for i in range(31)]
        return list(await asyncio.gather(*(timed(text) for text in texts)))

    served.run(served.post("/verify", verify_body(served.rows[0], RIGHT)))  # the gold cached, a worker started
    start = time.monotonic()
    results = served.run(burst())
    (endless_done, endless), others = results[0], results[1:]
    assert endless["exec_status"] == "timeout"
    assert endless["reward"] == pytest.approx(endless["turn"]["reward"]["total"])
    assert [body["match"] for _, body in others] == [bool(i % 2) for i in range(31)]
    assert max(done for done, _ in others) < endless_done
    assert endless_done - start < 30  # the timeout ended it; nothing waited on another's query


def test_an_episode_whose_gold_fails_ends_at_its_first_step_with_reward_zero(served: Served) -> None:
    row = {**served.rows[0], "gold_sql": "SELECT nme FROM nowhere"}

    async def episode() -> tuple[Any, Any]:
        _, reset, cookies = await served.post("/reset", row)
        session = {key: morsel.value for key, morsel in cookies.items()}
        _, step, _ = await served.post("/step", verify_body(row, RIGHT), cookies=session)
        return reset, step

    reset, step = served.run(episode())
    assert "nowhere" in reset["info"]["gold_error"]
    assert (step["reward"], step["terminated"], step["observation"]) == (0.0, True, None)
    assert step["info"]["stop"] == "gold_invalid"
    assert step["info"]["mask_sample"] is True
    assert step["info"]["failure_kind"] == "progress_sql:gold_invalid"
