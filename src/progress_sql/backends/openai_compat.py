"""A standard-library client for OpenAI-compatible chat-completions servers (vLLM, SGLang, llama.cpp,
...); retries and errors: docs/environment.md#generation-backends-and-progress-sql-rollout."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from progress_sql.backends.base import GenerationConfig
from progress_sql.errors import ProgressSQLError
from progress_sql.prompts import Message

_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class BackendError(ProgressSQLError):
    """The generation server could not be reached or kept failing."""


class OpenAICompatibleBackend:
    """Chat completions over HTTP; ``concurrency`` requests are in flight at once."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        retries: int = 3,
        concurrency: int = 8,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.concurrency = max(1, concurrency)

    def generate(self, conversations: Sequence[Sequence[Message]], config: GenerationConfig) -> list[list[str]]:
        with ThreadPoolExecutor(self.concurrency) as pool:
            return list(pool.map(lambda messages: self._complete(messages, config), conversations))

    def _payload(self, messages: Sequence[Message], config: GenerationConfig) -> bytes:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "n": config.n,
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
        }
        if config.seed is not None:
            body["seed"] = config.seed
        return json.dumps(body).encode("utf-8")

    def _complete(self, messages: Sequence[Message], config: GenerationConfig) -> list[str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=self._payload(messages, config), headers=headers)
        last_error = "no attempt made"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)))
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return _choices(json.loads(response.read().decode("utf-8")), config.n)
            except urllib.error.HTTPError as error:
                detail = error.read().decode("utf-8", errors="replace")[:500]
                last_error = f"HTTP {error.code} from {self.url}: {detail}"
                if error.code not in _RETRY_STATUS:
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                last_error = f"cannot reach {self.url}: {error}"
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                last_error = f"{self.url} answered with something that is not JSON: {error}"
        raise BackendError(last_error)


def _choices(body: dict[str, Any], n: int) -> list[str]:
    try:
        choices = sorted(body["choices"], key=lambda choice: choice.get("index", 0))
        texts = [(choice.get("message") or {}).get("content") or "" for choice in choices]
    except (KeyError, TypeError, AttributeError) as error:
        raise BackendError(f"unexpected chat-completions response shape: {str(body)[:300]}") from error
    if len(texts) != n:
        raise BackendError(f"asked for {n} choices, the server returned {len(texts)}")
    return texts
