"""The OpenAI-compatible backend against a real HTTP server that speaks chat completions."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from progress_sql.backends.base import AnswerReporting, GenerationConfig
from progress_sql.backends.openai_compat import BackendError, OpenAICompatibleBackend
from progress_sql.prompts import initial_messages
from tests.json_http import JsonHandler


class ChatServer(ThreadingHTTPServer):
    """Answers /v1/chat/completions with scripted text; can fail the first requests with a status."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ChatHandler)
        self.requests: list[dict[str, Any]] = []
        self.fail_first: list[int] = []
        self.max_choices: int | None = None  # a server that caps n (1: one that ignores it)
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class ChatHandler(JsonHandler):
    server: ChatServer

    def do_POST(self) -> None:  # noqa: N802  (http.server's name for the POST handler)
        if self.path != "/v1/chat/completions":
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append(request)
            status = self.server.fail_first.pop(0) if self.server.fail_first else 200
        if status != 200:
            self.send_json(status, {"error": {"message": "scripted failure"}})
            return
        if request.get("model") != "tiny":
            self.send_json(400, {"error": {"message": f"model {request.get('model')} not found"}})
            return
        question = request["messages"][-1]["content"].rsplit("Question: ", 1)[-1]
        choices = [
            {"index": i, "message": {"role": "assistant", "content": f"<think>{question}</think><sql>SELECT {i}</sql>"},
             "finish_reason": "stop"}
            for i in reversed(range(min(request.get("n", 1), self.server.max_choices or 99)))  # out of order on purpose
        ]  # fmt: skip
        self.send_json(200, {"id": "x", "object": "chat.completion", "choices": choices})


@pytest.fixture
def server() -> Iterator[ChatServer]:
    chat = ChatServer()
    thread = threading.Thread(target=chat.serve_forever, daemon=True)
    thread.start()
    yield chat
    chat.shutdown()
    chat.server_close()


def test_generates_n_choices_per_conversation_in_order(server: ChatServer) -> None:
    backend = OpenAICompatibleBackend(server.base_url, "tiny", api_key="secret", concurrency=2)
    conversations = [initial_messages("", f"question {i}") for i in range(5)]
    outputs = backend.generate(conversations, GenerationConfig(n=3, temperature=1.0, seed=7))
    assert [out[0] for out in outputs] == [f"<think>question {i}</think><sql>SELECT 0</sql>" for i in range(5)]
    assert all(out[2].endswith("<sql>SELECT 2</sql>") for out in outputs)
    sent = server.requests[0]
    assert (sent["n"], sent["temperature"], sent["seed"], sent["max_tokens"]) == (3, 1.0, 7, 1024)
    assert sent["messages"][0]["role"] == "system"
    assert len(server.requests) == 5
    assert backend.draws == "one request per conversation with n"


@pytest.mark.parametrize("max_choices", [1, 2])
def test_samples_a_server_leaves_out_are_drawn_as_separate_requests(server: ChatServer, max_choices: int) -> None:
    """A server that ignores n (transformers serve) or caps it answers with fewer choices: the rest come
    from requests for one sample each, seeded seed + k so that they differ and a run repeats."""
    server.max_choices = max_choices
    backend = OpenAICompatibleBackend(server.base_url, "tiny", concurrency=3)
    outputs = backend.generate([initial_messages("", f"q{i}") for i in range(3)], GenerationConfig(n=4, seed=7))
    assert [len(out) for out in outputs] == [4, 4, 4]
    assert outputs[1][0] == "<think>q1</think><sql>SELECT 0</sql>"
    first = [r for r in server.requests if r.get("n") == 4]
    extra = [r for r in server.requests if "n" not in r]
    assert len(first) == 3
    assert len(extra) == 3 * (4 - max_choices)
    assert sorted(r["seed"] for r in extra if r["messages"][-1]["content"].endswith("q0")) == list(
        range(7 + max_choices, 7 + 4)
    )
    assert f"the server returned {max_choices} choice(s)" in backend.draws


def test_separate_sampling_never_sends_n(server: ChatServer) -> None:
    backend = OpenAICompatibleBackend(server.base_url, "tiny", sampling="separate")
    outputs = backend.generate([initial_messages("", "q")], GenerationConfig(n=3, temperature=1.0))
    assert len(outputs[0]) == 3
    assert [("n" in r, r["seed"]) for r in sorted(server.requests, key=lambda r: r["seed"])] == [
        (False, 0),
        (False, 1),
        (False, 2),
    ]
    assert backend.draws.startswith("separate requests")


def test_a_single_sample_sends_neither_n_nor_an_invented_seed(server: ChatServer) -> None:
    backend = OpenAICompatibleBackend(server.base_url, "tiny")
    backend.generate([initial_messages("", "q")], GenerationConfig())
    assert "n" not in server.requests[0]
    assert "seed" not in server.requests[0]


def test_retries_transient_server_errors(server: ChatServer) -> None:
    server.fail_first = [503, 429]
    backend = OpenAICompatibleBackend(server.base_url, "tiny", retries=3, concurrency=1)
    assert backend.generate([initial_messages("", "q")], GenerationConfig())[0] == [
        "<think>q</think><sql>SELECT 0</sql>"
    ]
    assert len(server.requests) == 3


def test_client_errors_are_not_retried_and_say_why(server: ChatServer) -> None:
    backend = OpenAICompatibleBackend(server.base_url, "missing-model", retries=3)
    with pytest.raises(BackendError, match=r"HTTP 400.*missing-model not found"):
        backend.generate([initial_messages("", "q")], GenerationConfig())
    assert len(server.requests) == 1


def test_unreachable_server_is_a_clear_error() -> None:
    backend = OpenAICompatibleBackend("http://127.0.0.1:9/v1", "tiny", retries=0, timeout=2)
    with pytest.raises(BackendError, match="cannot reach"):
        backend.generate([initial_messages("", "q")], GenerationConfig())


@pytest.mark.parametrize(
    ("n", "max_choices", "sampling"), [(1, None, "n"), (4, None, "n"), (4, 2, "n"), (3, None, "separate")]
)
def test_each_conversation_is_reported_once_with_all_its_samples(
    server: ChatServer, n: int, max_choices: int | None, sampling: str
) -> None:
    """``answered(1)`` per conversation, when its last sample came (the first request's, or the last of the
    separate requests for the samples a capped server left out), whatever the order the threads finish."""
    server.max_choices = max_choices
    backend = OpenAICompatibleBackend(server.base_url, "tiny", concurrency=3, sampling=sampling)  # type: ignore[arg-type]
    assert isinstance(backend, AnswerReporting)
    conversations = [initial_messages("", f"q{i}") for i in range(5)]
    steps: list[int] = []
    outputs = backend.generate_reporting(conversations, GenerationConfig(n=n, temperature=1.0, seed=2), steps.append)
    assert steps == [1] * 5
    assert [len(texts) for texts in outputs] == [n] * 5
