"""Shared-prefix decoding against transformers' own attention and generation: the same scores, the same
answers (tests/tiny_lm.py's 2-layer Qwen2, 4 query heads over 2 key/value heads)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the transformers backend needs the [trl] extra")
transformers = pytest.importorskip("transformers", reason="the transformers backend needs the [trl] extra")

from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: E402

from progress_sql.backends.base import GenerationConfig  # noqa: E402
from progress_sql.backends.hf import TransformersBackend  # noqa: E402
from progress_sql.backends.shared_prefix import (  # noqa: E402
    Halves,
    prefix_groups,
    shared_prefix_attention,
    supports_shared_prefix,
    worth_sharing,
)
from tests.tiny_lm import tiny_model, tiny_tokenizer  # noqa: E402

SCHEMA_A = "CREATE TABLE singer (singer_id INT, name TEXT, country TEXT, age INT); " * 6
SCHEMA_B = "CREATE TABLE stadium (stadium_id INT, location TEXT, capacity INT); " * 6
QUESTIONS = "how many singers are there? list the names by age. <sql>SELECT name FROM singer</sql>"
CORPUS = [SCHEMA_A, SCHEMA_B, QUESTIONS] * 20


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    tokenizer = tiny_tokenizer(CORPUS)
    return tiny_model(tokenizer).eval(), tokenizer


class _Module:
    num_key_value_groups = 2
    is_causal = True


@pytest.mark.parametrize("q_len", [1, 5])
def test_attention_equals_sdpa_over_the_prefix_and_padded_own_tokens(q_len: int) -> None:
    """Cascade attention (the prefix once, each row's own tokens, softmax parts combined) gives what SDPA
    gives over each row's whole sequence, with padding between the prefix and a row's own tokens."""
    gen = torch.Generator().manual_seed(0)
    batch, heads, kv_heads, dim, prefix_len, own_len = 3, 4, 2, 8, 7, 6
    query = torch.randn(batch, heads, q_len, dim, generator=gen)
    prefix_k, prefix_v = (torch.randn(1, kv_heads, prefix_len, dim, generator=gen) for _ in range(2))
    own_k, own_v = (torch.randn(batch, kv_heads, own_len, dim, generator=gen) for _ in range(2))
    visible = torch.ones(batch, 1, q_len, prefix_len + own_len, dtype=torch.bool)
    visible[1, :, :, prefix_len : prefix_len + 2] = False  # row 1: two pads after the prefix
    for i in range(q_len):  # causal over the own tokens: query i is own token own_len - q_len + i
        visible[:, :, i, prefix_len + own_len - q_len + i + 1 :] = False
    ours, _ = shared_prefix_attention(_Module(), query, Halves(prefix_k, own_k), Halves(prefix_v, own_v), visible)
    whole_k = torch.cat([prefix_k.expand(batch, -1, -1, -1), own_k], dim=2)
    whole_v = torch.cat([prefix_v.expand(batch, -1, -1, -1), own_v], dim=2)
    reference, _ = sdpa_attention_forward(_Module(), query, whole_k, whole_v, visible, scaling=dim**-0.5)
    assert ours.shape == reference.shape == (batch, q_len, heads, dim)
    torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-6)


def test_prompts_are_grouped_by_their_shared_prefix() -> None:
    a, b = [1] * 80, [2] * 90
    prompts = [[*a, 5], [*b, 6, 7], [*a, 8, 9], [3] * 10, [*b, 4], [*a, 6]]
    groups, alone = prefix_groups(prompts, batch_size=2)
    assert groups == [([0, 5], 80), ([4, 1], 90)]  # token order: a+[5] < a+[6] < a+[8, 9]; b+[4] < b+[6, 7]
    assert alone == [2, 3]  # a third a-prompt past the batch size, and one with no long shared prefix
    assert worth_sharing([a + [1] * 600, [*a, 2]]) == 0  # an own part too long for the prefill's scores


def test_the_backend_answers_as_the_standard_path(tiny: tuple[Any, Any]) -> None:
    """Greedy and seeded sampled answers through shared-prefix batches equal those of left-padded batches;
    two schemas' questions interleaved form two groups, a lone question takes the standard path."""
    model, tokenizer = tiny
    assert supports_shared_prefix(model)
    shared = TransformersBackend(model, tokenizer, batch_size=4)
    standard = TransformersBackend(model, tokenizer, batch_size=4, share_prefix=False)
    assert shared.share_prefix
    assert "stored once" in shared.draws
    assert not standard.share_prefix
    questions = ["how many singers?", "list the names", "how many singers are there by age?", "list names"]
    pairs = [(schema, question) for schema in (SCHEMA_A, SCHEMA_B) for question in questions][::-1]
    conversations = [[{"role": "system", "content": s}, {"role": "user", "content": q}] for s, q in pairs]
    conversations.append([{"role": "user", "content": "a question alone"}])
    groups, alone = shared._groups([tokenizer(shared._prompt(c)).input_ids for c in conversations])
    assert len(groups) == 2
    assert alone == [8]
    assert shared.generate(conversations, GenerationConfig(max_tokens=12)) == standard.generate(
        conversations, GenerationConfig(max_tokens=12)
    )
    sampled = GenerationConfig(n=2, temperature=1.0, max_tokens=8, seed=3)
    outputs = shared.generate(conversations, sampled)
    assert [len(choices) for choices in outputs] == [2] * len(conversations)
    assert shared.generate(conversations, sampled) == outputs
