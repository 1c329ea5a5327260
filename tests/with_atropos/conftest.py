"""Fixtures of the Atropos tests (run in the atropos side environment; see /conftest.py).

Nothing is downloaded: a byte-level BPE tokenizer with ChatML special tokens and a chat template is
trained here; the databases are built from committed SQL scripts; the model is :class:`ScriptedChat`,
a real OpenAI-compatible HTTP server that answers each conversation from a script (keyed by the
question in its first user message, by the number of assistant turns so far) and records when every
request came, so the tests can see what ran at once.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from progress_sql.export.build import export_items, write_export
from progress_sql.export.formats import get_format
from progress_sql.types import Example
from tests.chatml_tokenizer import save_chatml_tokenizer
from tests.conftest import REPO_ROOT, build_database
from tests.json_http import JsonHandler

MODEL = "tiny"
GOLD = 'SELECT name FROM singer WHERE country = "France" AND age > 40'
QUESTION = "What are the names of singers from France older than 40?"
WRONG = "<think>all singers</think><sql>SELECT name FROM singer</sql>"
RIGHT = f"<think>filter</think><sql>{GOLD}</sql>"
ENDLESS = (
    "<think>count forever</think>"
    "<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c</sql>"
)


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tokenizer folder (ChatML specials, eos = <|im_end|>) that ``AutoTokenizer`` loads by path."""
    folder = tmp_path_factory.mktemp("chatml_tokenizer")
    save_chatml_tokenizer(folder)
    return folder


@dataclass(frozen=True, slots=True)
class Request:
    """One chat request as the server saw it: when it came and when it was answered, the script key
    of its conversation (None: not a scripted one, e.g. Atropos's health check) and its turn."""

    arrived: float
    answered: float
    key: str | None
    turn: int
    body: Mapping[str, Any]


class ScriptedChat(ThreadingHTTPServer):
    """``/v1/chat/completions`` from a script: ``script[key]`` is a list of trajectories (each a list of
    answers); a new conversation whose first user message contains ``key`` takes the next trajectory in
    turn, later turns continue the trajectory whose earlier answers the conversation holds. The answer
    of turn k takes ``delays[k]`` seconds (the last one for later turns)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ScriptedHandler)
        self.script: dict[str, list[list[str]]] = {}
        self.delays: tuple[float, ...] = (0.0,)
        self.requests: list[Request] = []
        self._started: dict[str, int] = {}
        self._open = 0
        self.most_open = 0
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reset(self, script: Mapping[str, Sequence[Sequence[str]]], delays: Sequence[float] = (0.0,)) -> None:
        with self.lock:
            self.script = {key: [list(t) for t in trajectories] for key, trajectories in script.items()}
            self.delays, self.requests, self._started, self.most_open = tuple(delays), [], {}, 0

    def answer(self, messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, int, str]:
        opening = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
        said = [str(m["content"]) for m in messages if m["role"] == "assistant"]
        with self.lock:
            key = next((k for k in self.script if k in opening), None)
            if key is None:
                return None, len(said), "ok"
            trajectories = self.script[key]
            if not said:
                chosen = trajectories[self._started.get(key, 0) % len(trajectories)]
                self._started[key] = self._started.get(key, 0) + 1
            else:
                chosen = next(t for t in trajectories if t[: len(said)] == said)
            return key, len(said), chosen[len(said)]

    def requests_of(self, key: str) -> list[Request]:
        return [r for r in self.requests if r.key == key]

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client gone mid-answer: the environment process was stopped at the end of a test
        super().handle_error(request, client_address)


class ScriptedHandler(JsonHandler):
    server: ScriptedChat

    def do_POST(self) -> None:  # noqa: N802  (http.server's name for the POST handler)
        arrived = time.monotonic()
        if self.path != "/v1/chat/completions":
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("model") != MODEL:
            self.send_json(404, {"error": {"message": f"model {body.get('model')} not found"}})
            return
        key, turn, text = self.server.answer(body["messages"])
        with self.server.lock:
            self.server._open += 1
            self.server.most_open = max(self.server.most_open, self.server._open)
        time.sleep(self.server.delays[min(turn, len(self.server.delays) - 1)] if key is not None else 0.0)
        with self.server.lock:
            self.server._open -= 1
            self.server.requests.append(Request(arrived, time.monotonic(), key, turn, body))
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        self.send_json(200, {"id": "scripted", "object": "chat.completion", "created": 0, "model": MODEL,
                         "choices": [choice]})  # fmt: skip


@pytest.fixture(scope="session")
def chat() -> Iterator[ScriptedChat]:
    server = ScriptedChat()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def music_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("music.sql", tmp_path_factory.mktemp("atropos_db") / "database")


def write_rows(path: Path, examples: Sequence[Example], row_format: str = "trl") -> Path:
    """``examples`` exported as ``progress-sql export`` writes them (``export_items``, ``write_export``)."""
    write_export(export_items([("spider-train", e) for e in examples]), get_format(row_format), path)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def side_env() -> dict[str, str]:
    """The environment of a subprocess: src/ and the repository (for ``tests``) on the path, no
    Weights & Biases, one thread per numeric library."""
    path = os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
            "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip


def atropos(mode: str, *options: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``python -m progress_sql.integrations.atropos MODE OPTIONS`` (Atropos's own command line)."""
    command = [sys.executable, "-m", "progress_sql.integrations.atropos", mode, *options]
    return subprocess.run(command, cwd=cwd, env=side_env(), capture_output=True, text=True, timeout=timeout,
                          check=False)  # fmt: skip


def read_groups(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
