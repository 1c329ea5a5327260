"""The transformers backend with a tiny model built from a config and a tokenizer trained here."""

from __future__ import annotations

from collections.abc import Iterator
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


def _static_layer_of_transformers_5_17(self: Any, key_states: Any, value_states: Any) -> None:
    """transformers 5.17's ``StaticLayer.lazy_initialization`` (to 5.23): keys and values both in the keys' dtype."""
    self.dtype, self.device = key_states.dtype, key_states.device
    self.batch_size, self.num_heads = key_states.shape[:2]
    self.v_head_dim, self.k_head_dim = value_states.shape[-1], key_states.shape[-1]
    shape = (self.batch_size, self.num_heads, self.max_cache_len)
    self.keys = torch.zeros((*shape, self.k_head_dim), dtype=self.dtype, device=self.device)
    self.values = torch.zeros((*shape, self.v_head_dim), dtype=self.dtype, device=self.device)
    self.cumulative_length = self.cumulative_length.to(self.device)
    self.is_initialized = True


@pytest.fixture
def bf16_prepared(tiny: tuple[Any, Any]) -> Iterator[Any]:
    """A copy of the tiny model prepared by accelerate for bf16 mixed precision, as TRL's trainer prepares the
    model it trains (its forward wrapped in autocast); accelerate's process state reset afterwards."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    model, tokenizer = tiny
    copy = tiny_model(tokenizer)
    copy.load_state_dict(model.state_dict())
    try:
        yield Accelerator(mixed_precision="bf16", cpu=True).prepare(copy.eval())
    finally:
        AcceleratorState._reset_state(reset_partial_state=True)


@pytest.mark.parametrize("older_static_cache", [False, True], ids=["installed", "transformers-5.17"])
def test_a_model_under_bf16_autocast_generates_where_the_static_cache_takes_one_dtype(
    tiny: tuple[Any, Any], bf16_prepared: Any, monkeypatch: pytest.MonkeyPatch, older_static_cache: bool
) -> None:
    """Under autocast a layer's keys leave the rotary embedding in fp32 and its values stay bf16. Where the
    installed transformers' static cache stores both in one dtype (5.17, the GPU machine's: the post-RL held-out
    evaluation of full fine-tuning failed in ``index_copy_`` on 2026-12-06), the backend decodes such a model
    with the dynamic cache; where it keeps each dtype (5.24), with the static one. Same answers either way."""
    from transformers.cache_utils import StaticLayer

    from progress_sql.backends import hf

    if older_static_cache:
        monkeypatch.setattr(StaticLayer, "lazy_initialization", _static_layer_of_transformers_5_17)
    hf.static_cache_keeps_each_dtype.cache_clear()
    try:
        assert hf.runs_under_autocast(bf16_prepared)
        assert not hf.runs_under_autocast(tiny[0])
        assert hf.static_cache_keeps_each_dtype() is not older_static_cache
        backend = TransformersBackend(bf16_prepared, tiny[1])
        conversations = [initial_messages("", "how many singers?"), initial_messages("", "list the names")]
        config = GenerationConfig(max_tokens=8)
        answers = backend.generate(conversations, config)
        assert answers == TransformersBackend(bf16_prepared, tiny[1], cache_implementation=None).generate(
            conversations, config
        )
        assert ("static KV cache" in backend.draws) is not older_static_cache
        if older_static_cache:  # what the backend avoids: the static cache itself fails there
            encoded = tiny[1](["how many singers?"], return_tensors="pt")
            with pytest.raises(RuntimeError, match="same dtype"):
                bf16_prepared.generate(**encoded, max_new_tokens=2, cache_implementation="static")
    finally:
        hf.static_cache_keeps_each_dtype.cache_clear()  # the next caller probes the real class again
