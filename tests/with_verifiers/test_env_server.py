"""The environment behind verifiers' own env server (``serve_env``: what prime-rl starts, in a process of
its own) and driven by its ``EnvClient`` over ZMQ: a request it cannot run is answered in its error shape,
and 32 episodes at once, one of them stuck on a query that never ends, all come back."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from verifiers.v1.configs.client import EvalClientConfig
from verifiers.v1.serve import EnvClient, env_config_data, serve_env
from verifiers.v1.types import SamplingConfig
from verifiers.v1.utils.loaders import load_environment, resolve_env_config

from tests.with_verifiers.chat_server import MODEL, ChatServer, serving
from tests.with_verifiers.support import (
    COUNT,
    ENDLESS,
    FRANCE,
    GOLDS,
    TASKSET_ID,
    music_examples,
    plugin_on_path,
    write_rows,
)

#: The query timeout of these episodes: the stuck episode's two turns hold a worker this long each.
TIMEOUT_S = 4.0
EPISODES = 32
#: The one question whose answers never end (the count question of row 0).
STUCK = 0


def stuck_or_right(question: str, replies: int, last: str) -> str:
    """Every answer right, except that the stuck episode's question is answered with an endless CTE."""
    return ENDLESS if question == COUNT else GOLDS[question]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vf_server")
    plugin_on_path(path / "plugin")
    return path


@pytest.fixture(scope="module")
def rows(folder: Path) -> Path:
    france, count = music_examples(folder)
    return write_rows(folder, [count] + [france] * (EPISODES - 1))


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with serving(stuck_or_right) as server:
        yield server


@pytest.fixture(scope="module")
def address(rows: Path, monkeypatch_module: pytest.MonkeyPatch) -> Iterator[str]:
    """``serve_env`` in a spawned process, as prime-rl runs it, on an OS-chosen port."""
    config = resolve_env_config(
        {"taskset": {"id": TASKSET_ID, "rows": str(rows),
                     "settings": {"timeout_s": TIMEOUT_S, "max_turns": 2, "execution_workers": 8}}}
    )  # fmt: skip
    context = multiprocessing.get_context("spawn")
    addresses = context.Queue()
    process = context.Process(
        target=serve_env,
        kwargs={"max_workers": 1, "address": "tcp://127.0.0.1:0", "address_queue": addresses,
                "config_data": env_config_data(config)},
    )  # fmt: skip
    process.start()
    try:
        yield addresses.get(timeout=120)
    finally:
        process.terminate()
        process.join(30)


def task_data(rows: Path) -> list[dict[str, Any]]:
    """The tasks as a trainer's client sends them: the taskset loaded on the client side, each task's
    data dumped onto the wire."""
    env = load_environment(resolve_env_config({"taskset": {"id": TASKSET_ID, "rows": str(rows)}}))
    return [task.data.model_dump(mode="json") for task in env.taskset]


async def run_all(address: str, tasks: list[dict[str, Any]], base_url: str) -> list[Any]:
    """Every task at once through one client, as a trainer's rollout step sends a batch."""
    client = EnvClient(address)
    await client.wait_for_server_startup(timeout=120)
    endpoint = EvalClientConfig(base_url=base_url, api_key_var="SCRIPTED_SQL_KEY")
    try:
        return list(await asyncio.gather(*(client.run(endpoint, MODEL, SamplingConfig(), data) for data in tasks)))
    finally:
        await client.close()


@pytest.fixture(scope="module")
def episodes(address: str, rows: Path, chat: ChatServer) -> list[Any]:
    return asyncio.run(run_all(address, task_data(rows), chat.base_url))


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCRIPTED_SQL_KEY", "unused")
        yield patch


def test_thirty_two_episodes_at_once_one_stuck_on_an_endless_query(episodes: list[Any]) -> None:
    assert len(episodes) == EPISODES
    summaries = [episode.traces[0].info["progress_sql"] for episode in episodes]
    stuck = summaries[STUCK]
    assert [t["exec_status"] for t in stuck["turns"]] == ["timeout", "timeout"]
    assert stuck["done"]
    assert not stuck["metrics"]["match"]
    others = [summary for i, summary in enumerate(summaries) if i != STUCK]
    assert all(summary["metrics"]["match"] for summary in others)
    assert all(episode.traces[0].rewards["progress_reward"].score > 0 for episode in episodes[1:])
    # While the stuck episode's queries ran, the others went on: their steps ran inside its steps'
    # windows (steps run off the event loop, one thread and one execution worker each; a step run on
    # the loop would have frozen every other episode for TIMEOUT_S).
    windows = stuck["step_times"]
    assert all(end - start >= TIMEOUT_S for start, end in windows)
    inside = [
        (start, end)
        for summary in others
        for start, end in summary["step_times"]
        if any(w_start < start and end < w_end for w_start, w_end in windows)
    ]
    assert inside


def test_a_malformed_row_is_answered_in_the_servers_error_shape(address: str, rows: Path) -> None:
    bad = {**task_data(rows)[1], "row": {"prompt": [{"role": "user", "content": FRANCE}]}}

    async def send() -> None:
        client = EnvClient(address)
        try:
            await client.wait_for_server_startup(timeout=120)
            await client.run(EvalClientConfig(base_url="http://127.0.0.1:9/v1"), MODEL, SamplingConfig(), bad)
        finally:
            await client.close()

    # EnvServer._handle replies BaseResponse(success=False, error="<type>: <message>"); EnvClient raises it
    with pytest.raises(RuntimeError, match=r"^ValidationError: (?s:.*)a TRL row lacks source_index, db_id, db_path"):
        asyncio.run(send())
