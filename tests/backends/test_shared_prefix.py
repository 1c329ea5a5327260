"""Shared-prefix decoding against transformers' own attention and generation: the same scores, the same
answers (tests/tiny_lm.py's 2-layer Qwen2, 4 query heads over 2 key/value heads)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the transformers backend needs the [trl] extra")
transformers = pytest.importorskip("transformers", reason="the transformers backend needs the [trl] extra")

from transformers.integrations.sdpa_attention import sdpa_attention_forward  # noqa: E402

from progress_sql.backends.base import AnswerReporting, GenerationConfig  # noqa: E402
from progress_sql.backends.hf import TransformersBackend  # noqa: E402
from progress_sql.backends.shared_prefix import (  # noqa: E402
    Decoding,
    Halves,
    decode_shared_prefix,
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
def test_attention_equals_sdpa_over_the_prefix_and_each_rows_own_tokens(q_len: int) -> None:
    """Cascade attention (the prefix once, each row's own tokens, softmax parts combined) gives what SDPA gives
    over each row's whole sequence, rows at different own lengths (a row's later own slots are stale)."""
    gen = torch.Generator().manual_seed(0)
    batch, heads, kv_heads, dim, prefix_len, width = 3, 4, 2, 8, 7, 9
    query = torch.randn(batch, heads, q_len, dim, generator=gen)
    prefix_k, prefix_v = (torch.randn(1, kv_heads, prefix_len, dim, generator=gen) for _ in range(2))
    own_k, own_v = (torch.randn(batch, kv_heads, width, dim, generator=gen) for _ in range(2))
    starts = torch.tensor([width - q_len, 2, 0])  # row i's queries are its own tokens starts[i] ..
    ours, _ = shared_prefix_attention(
        _Module(), query, Halves(prefix_k, own_k, starts), Halves(prefix_v, own_v, starts), None
    )
    assert ours.shape == (batch, q_len, heads, dim)
    for row in range(batch):
        seen = int(starts[row]) + q_len  # the row's own tokens up to its last query
        whole_k = torch.cat([prefix_k[0], own_k[row, :, :seen]], dim=1)[None]
        whole_v = torch.cat([prefix_v[0], own_v[row, :, :seen]], dim=1)[None]
        causal = torch.ones(q_len, prefix_len + seen, dtype=torch.bool).tril(prefix_len + seen - q_len)[None, None]
        reference, _ = sdpa_attention_forward(
            _Module(), query[row : row + 1], whole_k, whole_v, causal, scaling=dim**-0.5
        )
        torch.testing.assert_close(ours[row : row + 1], reference, rtol=1e-5, atol=1e-6)


def test_half_precision_attention_is_combined_in_fp32() -> None:
    gen = torch.Generator().manual_seed(2)
    query = torch.randn(2, 4, 1, 8, generator=gen)
    prefix, own = torch.randn(1, 2, 30, 8, generator=gen), torch.randn(2, 2, 5, 8, generator=gen)
    starts = torch.tensor([4, 2])
    full, _ = shared_prefix_attention(_Module(), query, Halves(prefix, own, starts), Halves(prefix, own, starts), None)
    halves = Halves(prefix.bfloat16(), own.bfloat16(), starts)
    half, _ = shared_prefix_attention(_Module(), query.bfloat16(), halves, halves, None)
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), full, rtol=2e-2, atol=2e-2)


def test_answers_that_end_at_their_first_token_free_the_row_for_the_next(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    prompts = [tokenizer(SCHEMA_A + question).input_ids for question in ("how many?", "list", "names by age")]
    prefix = worth_sharing(prompts)
    assert prefix > 0
    answers = decode_shared_prefix(model, prompts, prefix, 1, Decoding(max_new_tokens=1, eos_token_id=0))
    assert [len(answer) for answer in answers] == [1, 1, 1]


def test_sampling_keeps_transformers_top_p_set() -> None:
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(1)) * 3
    for temperature, top_p in ((1.0, 0.9), (0.7, 0.5), (1.3, 0.99)):
        ours = Decoding(8, 0, temperature, top_p).sampling_scores(logits)
        theirs = TopPLogitsWarper(top_p)(None, TemperatureLogitsWarper(temperature)(None, logits.clone()))
        assert torch.equal(ours.isinf(), theirs.isinf())
        torch.testing.assert_close(ours[~ours.isinf()], theirs[~theirs.isinf()])


def test_prompts_are_grouped_by_their_shared_prefix() -> None:
    a, b = [1] * 80, [2] * 90
    prompts = [[*a, 5], [*b, 6, 7], [*a, 8, 9], [3] * 10, [*b, 4], [*a, 6], [*a[:40], 9]]
    groups, alone = prefix_groups(prompts)
    assert groups == [([0, 5, 2], 80), ([4, 1], 90)]  # token order: a+[5] < a+[6] < a+[8, 9]; b+[4] < b+[6, 7]
    assert alone == [3, 6]  # no long prefix shared with any other
    assert worth_sharing([a + [1] * 600, [*a, 2]]) == 0  # an own part too long


def test_a_transformers_without_the_cache_argument_takes_the_standard_path(tiny: tuple[Any, Any]) -> None:
    """transformers 5.17 (a GPU machine's, and [trl-gpu]'s pin) names the cache ``past_key_values`` in a
    model's forward and outputs; the loop is written against ``cache``, so such a model is not shared-prefix
    decoded (the GPU check of 2026-12-06 failed on ``output.cache`` there before this gate)."""
    model, tokenizer = tiny

    class OlderApi(type(model)):  # type: ignore[misc]
        def forward(self, input_ids: Any = None, past_key_values: Any = None, **kwargs: Any) -> Any:
            kwargs.setdefault("cache", past_key_values)  # generate() passes it by its new name
            return super().forward(input_ids=input_ids, **kwargs)

    older = OlderApi(model.config).eval()
    older.load_state_dict(model.state_dict())
    assert supports_shared_prefix(model)
    assert not supports_shared_prefix(older)
    backend = TransformersBackend(older, tokenizer, batch_size=2)
    assert not backend.share_prefix
    conversations = [[{"role": "user", "content": SCHEMA_A + question}] for question in ("how many?", "list names")]
    answers = backend.generate(conversations, GenerationConfig(max_tokens=4))
    assert answers == TransformersBackend(model, tokenizer, batch_size=2, share_prefix=False).generate(
        conversations, GenerationConfig(max_tokens=4)
    )


def test_the_backend_answers_as_the_standard_path(tiny: tuple[Any, Any]) -> None:
    """Greedy and seeded sampled answers through shared-prefix batches equal those of left-padded batches;
    two schemas' questions interleaved form two groups, a lone question takes the standard path."""
    model, tokenizer = tiny
    assert supports_shared_prefix(model)
    shared = TransformersBackend(model, tokenizer, batch_size=2)  # four questions a schema: rows are refilled
    standard = TransformersBackend(model, tokenizer, batch_size=2, share_prefix=False)
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


def test_the_backend_reports_each_conversation_as_its_answers_end(tiny: tuple[Any, Any]) -> None:
    """Shared-prefix groups report one conversation at a time, as its n answers end (before the call
    returns); the left-padded path reports each batch; every conversation is reported once."""
    model, tokenizer = tiny
    backend = TransformersBackend(model, tokenizer, batch_size=2)
    assert isinstance(backend, AnswerReporting)
    questions = ["how many singers?", "list the names", "how many singers are there by age?", "list names"]
    conversations = [[{"role": "system", "content": SCHEMA_A}, {"role": "user", "content": q}] for q in questions]
    conversations += [[{"role": "user", "content": "a question alone"}], [{"role": "user", "content": "and one more"}]]
    steps: list[int] = []
    config = GenerationConfig(n=2, temperature=1.0, max_tokens=8, seed=5)
    outputs = backend.generate_reporting(conversations, config, steps.append)
    assert sum(steps) == len(conversations)
    assert steps.count(1) >= len(questions)  # the group's four, one by one
    assert outputs == backend.generate(conversations, config)  # reporting changes no answer
