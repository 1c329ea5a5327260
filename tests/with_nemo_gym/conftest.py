"""A NeMo Gym resources server of ours in its own process, started as NeMo Gym's launcher starts one
(``serve``: the config in ``NEMO_GYM_CONFIG_DICT``, ``SimpleServer.run_webserver``), over rows exported
from a real SQLite database and converted to NeMo Gym rows; NeMo Gym's own ``ServerClient`` calls it."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.openai_utils import NeMoGymResponse, NeMoGymResponseOutputMessage, NeMoGymResponseOutputText
from nemo_gym.server_utils import (
    GlobalAIOHTTPAsyncClientConfig,
    ServerClient,
    get_global_aiohttp_client,
    global_aiohttp_client_exit,
    is_global_aiohttp_client_setup,
    set_global_aiohttp_client,
)
from omegaconf import OmegaConf

from progress_sql.export.build import export_items, write_export
from progress_sql.export.formats import get_format
from progress_sql.integrations.nemo_gym.rows import convert, load_rows
from progress_sql.integrations.nemo_gym.server import INSTANCE_NAME, launch_config
from progress_sql.types import Example
from tests.conftest import build_database

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLD = 'SELECT name FROM singer WHERE country = "France" AND age > 40'
WRONG = "<think>all singers</think><sql>SELECT name FROM singer</sql>"
RIGHT = f"<think>filter</think><sql>{GOLD}</sql>"
ENDLESS = (
    "<think>count forever</think>"
    "<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c</sql>"
)
#: The server's settings: a short query timeout for the pathological query, three turns.
SETTINGS = {"profile": "progress-sql", "timeout_s": 2.0, "max_turns": 3, "execution_workers": 8}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def src_environment() -> dict[str, str]:
    """The side environment runs progress-sql from src/ (it is not installed there); its ``python``
    first on PATH, as for a user who activated it."""
    path = os.pathsep.join(filter(None, [str(REPO_ROOT / "src"), str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NEMO_GYM_")}
    binaries = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**environment, "PYTHONPATH": path, "PATH": binaries}


def wait_until_up(url: str, process: subprocess.Popen[str], timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = process.stdout.read() if process.stdout else ""
            raise AssertionError(f"the server exited ({process.returncode}):\n{output}")
        try:
            if requests.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"no server at {url} after {timeout_s} s")


def stop(process: subprocess.Popen[str]) -> str:
    process.terminate()
    try:
        output, _ = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return output or ""


def model_response(text: str) -> dict[str, Any]:
    """A model's answer as NeMo Gym's Responses API object (what an agent puts in ``response``)."""
    return NeMoGymResponse(
        id="resp",
        created_at=0.0,
        model="policy",
        object="response",
        output=[
            NeMoGymResponseOutputMessage(
                id="msg",
                content=[NeMoGymResponseOutputText(annotations=[], text=text, type="output_text")],
                role="assistant",
                status="completed",
                type="message",
            )
        ],
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
    ).model_dump()


@dataclass(frozen=True)
class Served:
    url: str
    client: ServerClient
    rows: list[dict[str, Any]]  # the NeMo Gym rows: music (verified), then a row whose database is gone
    loop: asyncio.AbstractEventLoop  # NeMo Gym's one aiohttp client lives on one loop

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coroutine)

    async def post(self, path: str, body: dict[str, Any], **kwargs: Any) -> tuple[int, Any, Any]:
        response = await self.client.post(server_name=INSTANCE_NAME, url_path=path, json=body, **kwargs)
        return response.status, json.loads(await response.read()), response.cookies


@pytest.fixture(scope="session")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A TRL export of two rows (music with its database, one whose database is absent) and its
    conversion to NeMo Gym rows."""
    folder = tmp_path_factory.mktemp("nemo_gym")
    db = build_database("music.sql", folder / "database")
    examples = [
        Example(1, "Names of singers from France older than 40?", "music", str(db), GOLD),
        Example(0, "How many?", "gone", str(folder / "database" / "gone" / "gone.sqlite"), "SELECT 1"),
    ]
    out = folder / "train.jsonl"
    write_export(export_items([("spider-train", e) for e in examples]), get_format("trl"), out)
    converted = folder / "train.nemo_gym.jsonl"
    assert convert(out, converted, agent="progress_sql_simple_agent") == 2
    return out, converted


@pytest.fixture(scope="session")
def served(exported: tuple[Path, Path]) -> Iterator[Served]:
    rows_file, converted = exported
    port = free_port()
    # `progress-sql serve-env nemo-gym` (python -m progress_sql: the package is on PYTHONPATH here)
    argv = [sys.executable, "-m", "progress_sql", "serve-env", "nemo-gym", "--rows", str(rows_file),
            "--port", str(port), "--settings", json.dumps(SETTINGS)]  # fmt: skip
    process = subprocess.Popen(
        argv,
        env=src_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    loop = asyncio.new_event_loop()
    try:
        wait_until_up(url, process)
        config = OmegaConf.create(launch_config(rows_file, host="127.0.0.1", port=port, settings=SETTINGS))
        head = BaseServerConfig.model_validate(OmegaConf.to_container(config.head_server))
        client = ServerClient(head_server_config=head, global_config_dict=config)

        async def open_client() -> None:  # what a Gym process does first, from its (default) config
            set_global_aiohttp_client(GlobalAIOHTTPAsyncClientConfig())

        loop.run_until_complete(open_client())
        yield Served(url, client, load_rows(converted), loop)
    finally:
        stop(process)
        if is_global_aiohttp_client_setup():
            loop.run_until_complete(get_global_aiohttp_client().close())  # on the loop it was opened on
        global_aiohttp_client_exit()
        loop.close()
