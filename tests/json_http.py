"""The shared part of the tests' stand-in HTTP servers (scripted OpenAI-compatible chat endpoints):
a request handler that answers JSON and keeps the test output quiet."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """Answers with :meth:`send_json`; logs nothing (the test's own output stays readable)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
