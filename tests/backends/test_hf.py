"""The transformers backend with a tiny model built from a config and a tokenizer trained here."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the transformers backend needs the [trl] extra")
transformers = pytest.importorskip("transformers", reason="the transformers backend needs the [trl] extra")

from progress_sql.backends.base import GenerationConfig  # noqa: E402
from progress_sql.backends.hf import TransformersBackend  # noqa: E402
from progress_sql.prompts import initial_messages  # noqa: E402
from tests.tiny_lm import tiny_model, tiny_tokenizer  # noqa: E402

CORPUS = [
    "user: how many singers are there? assistant: <think>count</think><sql>SELECT count(*) FROM singer</sql>",
    "system: you write SQL. user: list the names. assistant: <sql>SELECT name FROM singer</sql>",
] * 20


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    tokenizer = tiny_tokenizer(CORPUS)
    return tiny_model(tokenizer).eval(), tokenizer


def test_greedy_generation_is_deterministic(tiny: tuple[Any, Any]) -> None:
    backend = TransformersBackend(*tiny)
    conversations = [initial_messages("", "how many singers?"), initial_messages("", "list the names")]
    first = backend.generate(conversations, GenerationConfig(max_tokens=8))
    second = backend.generate(conversations, GenerationConfig(max_tokens=8))
    assert first == second
    assert [len(choices) for choices in first] == [1, 1]
    assert all(isinstance(text, str) for choices in first for text in choices)


def test_sampling_returns_n_choices_and_respects_the_seed(tiny: tuple[Any, Any]) -> None:
    backend = TransformersBackend(*tiny)
    config = GenerationConfig(n=3, temperature=1.0, max_tokens=6, seed=11)
    conversation = [initial_messages("", "how many singers?")]
    outputs = backend.generate(conversation, config)
    assert len(outputs[0]) == 3
    assert backend.generate(conversation, config) == outputs


def test_chat_template_is_used_when_present(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    try:
        backend = TransformersBackend(model, tokenizer)
        assert backend.use_chat_template
        assert backend._prompt(initial_messages("", "q")).endswith("user: Question: q\nassistant:")
    finally:
        tokenizer.chat_template = None


def test_the_static_cache_gives_the_dynamic_caches_answers(tiny: tuple[Any, Any]) -> None:
    """The default static KV cache (one allocation per batch) decodes what ``generate``'s dynamic cache does:
    left-padded prompts of different lengths, greedy and sampled with a seed."""
    static, dynamic = TransformersBackend(*tiny), TransformersBackend(*tiny, cache_implementation=None)
    assert static.cache_implementation == "static"
    assert "static KV cache" in static.draws
    conversations = [initial_messages("", "how many singers?"), initial_messages("", "list the names of all singers")]
    for config in (GenerationConfig(max_tokens=12), GenerationConfig(n=2, temperature=1.0, max_tokens=12, seed=5)):
        assert static.generate(conversations, config) == dynamic.generate(conversations, config)
