"""Replay scripted responses from a JSONL file (``{"key": ..., "responses": [...]}`` per line), for
tests, demos and re-scoring saved generations; the keying rule:
docs/environment.md#generation-backends-and-progress-sql-rollout."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from progress_sql.backends.base import GenerationConfig
from progress_sql.errors import DatasetError
from progress_sql.jsonio import numbered_lines, read_text
from progress_sql.prompts import Message

KeyFn = Callable[[Sequence[Message]], str]


def question_key(messages: Sequence[Message]) -> str:
    """The question of a conversation opened by :func:`progress_sql.prompts.initial_messages`.

    >>> question_key([{"role": "user", "content": "Database Schema: ...\\nQuestion: How many?\\nEvidence: x"}])
    'How many?'
    """
    first = next((m["content"] for m in messages if m["role"] == "user"), "")
    question = first.rsplit("Question: ", 1)[-1]
    return question.split("\nEvidence: ", 1)[0].strip()


class ReplayBackend:
    """Answers each conversation with the next scripted response for its key."""

    name = "replay"
    draws = "the next scripted responses of each conversation's key"

    def __init__(self, script: Mapping[str, Sequence[str]], key: KeyFn = question_key) -> None:
        self.script = {k: list(v) for k, v in script.items()}
        self.key = key
        self.calls: dict[str, int] = {}

    @classmethod
    def from_file(cls, path: str | Path, key: KeyFn = question_key) -> ReplayBackend:
        script: dict[str, list[str]] = {}
        file = Path(path)
        for number, record in numbered_lines(read_text(file, "replay file"), str(file)):
            try:
                script[str(record["key"])] = [str(r) for r in record["responses"]]
            except (KeyError, TypeError) as error:
                raise DatasetError(f"{file}:{number}: expected {{'key': ..., 'responses': [...]}} ({error})") from error
        return cls(script, key)

    def generate(self, conversations: Sequence[Sequence[Message]], config: GenerationConfig) -> list[list[str]]:
        results = []
        for messages in conversations:
            key = self.key(messages)
            responses = self.script.get(key)
            if not responses:
                results.append([""] * config.n)  # an unscripted conversation gets an empty answer
                continue
            batch = []
            for _ in range(config.n):
                index = self.calls.get(key, 0)
                batch.append(responses[min(index, len(responses) - 1)])
                self.calls[key] = index + 1
            results.append(batch)
        return results
