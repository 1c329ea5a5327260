"""Atropos's serve mode, as a training run has it: ``run-api`` (Atropos's trajectory API), the
environment's ``serve`` process registering with it and a trainer that registers and pulls batches over
HTTP. 32 episodes run at once (8 items x group_size 4); one item's answers are a query that never ends,
cut at ``timeout_s``: the other episodes go on meanwhile."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from progress_sql.types import Example
from tests.with_atropos.conftest import ENDLESS, MODEL, ScriptedChat, free_port, side_env, write_rows

GOLD = "SELECT count(*) FROM singer"
WRONG = "<think>the stadiums</think><sql>SELECT count(*) FROM stadium</sql>"
RIGHT = f"<think>the singers</think><sql>{GOLD}</sql>"
RIGHT_AT_ONCE = f"<think>singers, at once</think><sql>{GOLD}</sql>"
ENDLESS_TOO = ENDLESS.replace("count forever", "count on and on")
QUESTIONS = [f"How many singers are there, batch {letter}?" for letter in "ABCDEFGH"]
PATHOLOGICAL = QUESTIONS[5]
GROUP_SIZE, TIMEOUT_S = 4, 6.0
#: Seconds the model takes for a first answer and a later one: the first answers of all 32 episodes
#: overlap, whatever order the episodes' gold queries were prepared in.
DELAYS_S = (3.0, 0.5)


def http(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def wait_for(check: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = check()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")


@pytest.fixture
def api() -> Iterator[str]:
    """Atropos's ``run-api`` on a free port."""
    port = free_port()
    command = [str(Path(sys.executable).parent / "run-api"), "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, env=side_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: http(f"{url}/"), 60, "run-api")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_32_episodes_at_once_and_a_pathological_query_does_not_stall_the_others(
    api: str, chat: ScriptedChat, tokenizer_dir: Path, music_db: Path, tmp_path: Path
) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", [Example(i, q, "music", str(music_db), GOLD)
                                                for i, q in enumerate(QUESTIONS)])  # fmt: skip
    script = {q: [[WRONG, RIGHT], [RIGHT_AT_ONCE]] for q in QUESTIONS}
    script[PATHOLOGICAL] = [[ENDLESS, ENDLESS], [ENDLESS_TOO, RIGHT]]
    chat.reset(script, delays=DELAYS_S)
    # The trainer's side: register, then the first /batch starts the run (environments may register).
    http(f"{api}/register", {"wandb_group": "g", "wandb_project": "p", "batch_size": 8 * GROUP_SIZE,
                             "max_token_len": 8192, "checkpoint_dir": "", "save_checkpoint_interval": -1,
                             "starting_step": 0, "num_steps": 100})  # fmt: skip
    assert http(f"{api}/batch") == {"batch": None}
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [sys.executable, "-m", "progress_sql.integrations.atropos", "serve",
         "--env.rows", str(rows), "--env.tokenizer_name", str(tokenizer_dir), "--env.use_wandb", "false",
         "--env.rollout_server_url", api, "--env.group_size", str(GROUP_SIZE), "--env.max_num_workers", "8",
         "--env.shuffle_rows", "false", "--env.max_turns", "2", "--env.steps_per_eval", "0",
         "--env.include_messages", "true", "--env.execution_workers", "8",
         "--env.env_config", json.dumps({"timeout_s": TIMEOUT_S}),
         "--openai.base_url", chat.base_url, "--openai.model_name", MODEL, "--openai.api_key", "x"],
        cwd=tmp_path, env=side_env(), stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        groups: list[dict[str, Any]] = []

        def pathological_group_arrived() -> bool:
            batch = http(f"{api}/batch")["batch"]
            groups.extend(batch or [])
            return any(PATHOLOGICAL in g["messages"][0][1]["content"] for g in groups)

        wait_for(pathological_group_arrived, 240, "the pathological group at the trainer")
    finally:
        serve.terminate()
        serve.wait(timeout=30)
        log.close()

    # 32 model calls were open at once: every episode of the 8 groups ran together.
    assert chat.most_open >= 8 * GROUP_SIZE, (tmp_path / "serve.log").read_text()[-3000:]
    slow = chat.requests_of(PATHOLOGICAL)
    slow_first = [r for r in slow if r.turn == 0][:GROUP_SIZE]
    slow_second = [r for r in slow if r.turn == 1][:GROUP_SIZE]
    # the query ran to its timeout: no second turn came sooner than timeout_s after the first answer
    assert min(r.arrived for r in slow_second) - min(r.answered for r in slow_first) >= TIMEOUT_S
    for question in QUESTIONS:
        if question == PATHOLOGICAL:
            continue
        mine = chat.requests_of(question)
        second_turns = [r for r in mine if r.turn == 1][:2]  # the first group's two episodes that needed one
        # each fast episode got its feedback and answered again while the slow query was still running
        assert max(r.answered for r in second_turns) < min(r.arrived for r in slow_second)

    # What the trainer pulled: groups of 4 sequences with Atropos's fields and our marks.
    for group in groups:
        assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == GROUP_SIZE
        assert all(len(t) == len(m) for t, m in zip(group["tokens"], group["masks"], strict=True))
        assert len(set(group["scores"])) > 1  # serve mode sends only groups whose scores differ
        assert {marks["stop"] for marks in group["overrides"]} == {"done"}
    slow_group = next(g for g in groups if PATHOLOGICAL in g["messages"][0][1]["content"])
    assert sorted(marks["match"] for marks in slow_group["overrides"]) == [False, False, True, True]
