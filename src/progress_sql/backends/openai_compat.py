"""A standard-library client for OpenAI-compatible chat-completions servers (vLLM, SGLang, llama.cpp,
``transformers serve``, ...); retries, errors and how ``n`` samples are drawn from servers that ignore
or cap ``n``: docs/environment.md#generation-backends-and-progress-sql-rollout."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Literal

from progress_sql.backends.base import GenerationConfig
from progress_sql.errors import ProgressSQLError
from progress_sql.prompts import Message

_RETRY_STATUS = {408, 429, 500, 502, 503, 504}
#: How the samples of a conversation are drawn: ``n`` asks for them in one request and, when the
#: server answers with fewer (it ignores or caps ``n``), draws the rest as separate requests;
#: ``separate`` always sends one request per sample (for servers that refuse the ``n`` field).
Sampling = Literal["n", "separate"]


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
        sampling: Sampling = "n",
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.concurrency = max(1, concurrency)
        self.sampling: Sampling = sampling
        self._fewest_choices: int | None = None  # the fewest choices a request with n > 1 got back
        self._lock = threading.Lock()

    @property
    def draws(self) -> str:
        """How samples were drawn so far, for ``summary.json``."""
        if self.sampling == "separate":
            return "separate requests, one sample each (sampling=separate)"
        if self._fewest_choices is None:
            return "one request per conversation with n"
        return (
            f"one request with n, the rest as separate requests: the server returned {self._fewest_choices} "
            "choice(s) where more were asked (it ignores or caps n)"
        )

    def generate(self, conversations: Sequence[Sequence[Message]], config: GenerationConfig) -> list[list[str]]:
        """``config.n`` texts per conversation, in order. Sample ``k`` drawn by a separate request uses
        seed ``seed + k`` (``k`` when no seed is given), so the extra samples differ and a run repeats."""
        return self.generate_reporting(conversations, config, lambda k: None)

    def generate_reporting(
        self, conversations: Sequence[Sequence[Message]], config: GenerationConfig, answered: Callable[[int], object]
    ) -> list[list[str]]:
        """:meth:`generate`, calling ``answered(1)`` as each conversation has all its samples (from the
        request threads, one call at a time)."""
        reporting = threading.Lock()

        def first(messages: Sequence[Message]) -> list[str]:
            texts = self._complete(messages, config)
            if len(texts) >= config.n:
                with reporting:
                    answered(1)
            return texts

        with ThreadPoolExecutor(self.concurrency) as pool:
            if self.sampling == "separate" or config.n == 1:
                outputs: list[list[str]] = [[] for _ in conversations]
            else:
                outputs = list(pool.map(first, conversations))
                self._note_choices(min(len(texts) for texts in outputs) if outputs else config.n, config.n)
            missing = [(i, k) for i, texts in enumerate(outputs) for k in range(len(texts), config.n)]
            pending = Counter(i for i, _ in missing)

            def extra(item: tuple[int, int]) -> str:
                text = self._complete(conversations[item[0]], _one_sample(config, item[1]))[0]
                with reporting:
                    pending[item[0]] -= 1
                    if not pending[item[0]]:
                        answered(1)
                return text

            for (i, _k), text in zip(missing, pool.map(extra, missing), strict=True):
                outputs[i].append(text)
        return outputs

    def _note_choices(self, fewest: int, asked: int) -> None:
        if fewest < asked:
            with self._lock:
                self._fewest_choices = min(fewest, self._fewest_choices or fewest)

    def _payload(self, messages: Sequence[Message], config: GenerationConfig) -> bytes:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": config.temperature,
            "top_p": config.top_p,
            "max_tokens": config.max_tokens,
        }
        if config.n > 1:  # the default is 1 everywhere; some servers refuse the field itself
            body["n"] = config.n
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


def _one_sample(config: GenerationConfig, k: int) -> GenerationConfig:
    """The settings of a request for sample ``k`` alone (a single sample keeps its own seed)."""
    return config if config.n == 1 else replace(config, n=1, seed=(config.seed or 0) + k)


def _choices(body: dict[str, Any], n: int) -> list[str]:
    """The texts of the answer's choices in index order: between 1 and ``n`` of them (a server may
    ignore or cap ``n``; the caller draws the rest)."""
    try:
        choices = sorted(body["choices"], key=lambda choice: choice.get("index", 0))
        texts = [(choice.get("message") or {}).get("content") or "" for choice in choices]
    except (KeyError, TypeError, AttributeError) as error:
        raise BackendError(f"unexpected chat-completions response shape: {str(body)[:300]}") from error
    if not 1 <= len(texts) <= n:
        raise BackendError(f"asked for {n} choices, the server returned {len(texts)}")
    return texts
