"""A real OpenAI-compatible HTTP server (``/v1/chat/completions``, plain and streamed) answering scripted
SQL, for verifiers' own client and harness to call: the model of these tests, as an endpoint."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from typing import Any

from tests.json_http import JsonHandler

#: The model name the tests ask for; any other is answered 404, as providers do.
MODEL = "scripted-sql"

#: ``answer(question, replies_so_far, last_user_text) -> SQL`` (wrapped in the paper's answer format).
Script = Callable[[str, int, str], str]


def question_of(messages: list[dict[str, Any]]) -> str:
    """The question of a conversation: the line after ``Question:`` in its first user message."""
    first = next(m for m in messages if m.get("role") == "user")
    content = first["content"] if isinstance(first["content"], str) else first["content"][0]["text"]
    return content.rsplit("Question:", 1)[-1].strip().splitlines()[0].strip()


class ChatServer(ThreadingHTTPServer):
    """Answers each chat completion with ``script``; records every request it served."""

    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), ChatHandler)
        self.script = script
        self.requests: list[dict[str, Any]] = []
        #: When each request arrived (``time.monotonic()``), beside ``requests``.
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class ChatHandler(JsonHandler):
    server: ChatServer
    protocol_version = "HTTP/1.1"

    def _stream(self, text: str) -> None:
        head = {"id": "scripted", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
        events = [
            {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
            {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**head, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}},
        ]
        data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802  (http.server's name for the POST handler)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not self.path.endswith("/chat/completions"):
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        request = json.loads(body)
        with self.server.lock:
            self.server.requests.append(request)
            self.server.arrivals.append(time.monotonic())
        if request.get("model") != MODEL:
            self.send_json(404, {"error": {"message": f"model {request.get('model')} not found"}})
            return
        messages = request["messages"]
        replies = sum(1 for m in messages if m.get("role") == "assistant")
        last = messages[-1]["content"] if isinstance(messages[-1]["content"], str) else ""
        text = f"<think>scripted</think><sql>{self.server.script(question_of(messages), replies, last)}</sql>"
        if request.get("stream"):
            self._stream(text)
            return
        self.send_json(200, {
            "id": "scripted", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })  # fmt: skip


@contextmanager
def serving(script: Script) -> Iterator[ChatServer]:
    chat = ChatServer(script)
    thread = threading.Thread(target=chat.serve_forever, daemon=True)
    thread.start()
    try:
        yield chat
    finally:
        chat.shutdown()
        chat.server_close()
