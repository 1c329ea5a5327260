"""Decoding a batch whose prompts begin with the same tokens (the instructions and one database's schema) with
that prefix computed and stored once: its keys and values live in one copy for the whole batch, and each
attention step reads them once for all rows (cascade attention: the prefix and each row's own tokens are
attended separately and their softmax parts combined), instead of once per row from a padded per-row cache.

On a CPU a decoding step of a small model is bound by reading the cache: a batch of 16 of the paper's prompts
(up to 2,400 tokens of schema) reads 16 copies of the same schema's keys and values at every new token
(docs/benchmarks.md#a-shared-prompt-prefix-on-a-cpu). The prompts are laid out as ``prefix, padding, own
tokens``: positions come from the attention mask, so each row's own tokens sit right after the prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from transformers.cache_utils import Cache, CacheLayerMixin
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

ATTENTION = "progress_sql_shared_prefix"
MIN_PREFIX_TOKENS = 64  # a shorter common prefix saves less than the separate pass costs
MAX_OWN_TOKENS = 512  # bounds the prefill's score tensors (rows x own tokens x prefix)


class Halves(NamedTuple):
    """A layer's keys (or values): the batch's one prefix ``[1, kv heads, P, d]`` and each row's own
    ``[batch, kv heads, S, d]``."""

    prefix: torch.Tensor
    own: torch.Tensor


class SharedPrefixLayer(CacheLayerMixin):  # type: ignore[misc]
    """One layer's cache: the prefix's keys and values once, each row's own tokens in buffers allocated at
    their final length (``capacity``) and written in place; attention sees the filled part."""

    is_sliding = False
    is_compileable = False

    def __init__(self, prefix_keys: torch.Tensor, prefix_values: torch.Tensor, capacity: int) -> None:
        super().__init__()
        self.prefix_keys, self.prefix_values = prefix_keys, prefix_values
        self.capacity = capacity
        self.length = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        batch, heads, _, key_dim = key_states.shape
        self._keys = key_states.new_empty((batch, heads, self.capacity, key_dim))
        self._values = value_states.new_empty((batch, heads, self.capacity, value_states.shape[-1]))
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            raise RuntimeError(f"shared-prefix cache holds {self.capacity} tokens a row, asked for {end}")
        self._keys[:, :, self.length : end] = key_states
        self._values[:, :, self.length : end] = value_states
        self.length = end
        self.keys, self.values = self._keys[:, :, :end], self._values[:, :, :end]
        return Halves(self.prefix_keys, self.keys), Halves(self.prefix_values, self.values)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.prefix_keys.shape[-2] + self.length + query_length, 0

    def get_seq_length(self) -> int:
        return int(self.prefix_keys.shape[-2]) + self.length

    def get_max_length(self) -> int:
        return -1

    def reset(self) -> None:
        self.length = 0


def shared_prefix_attention(
    module: Any,
    query: torch.Tensor,
    key: Halves,
    value: Halves,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention of ``query`` ``[batch, heads, q, d]`` over the shared prefix and each row's own tokens, with
    ``attention_mask`` ``[batch, 1, q, P + S]`` (True: attend). Every query comes after the whole prefix, which
    holds no padding, so the prefix part needs no mask. Returns ``[batch, q, heads, d]``, as transformers'
    attention functions do."""
    batch, heads, q_len, dim = query.shape
    kv_heads, prefix_len = key.prefix.shape[1], key.prefix.shape[2]
    group = heads // kv_heads  # query head h reads kv head h // group (transformers' repeat_kv order)
    scale = dim**-0.5 if scaling is None else scaling
    grouped = query.reshape(batch, kv_heads, group * q_len, dim)
    # The prefix: every row's queries against the one copy, [kv heads, batch x group x q, P].
    rows = grouped.transpose(0, 1).reshape(kv_heads, batch * group * q_len, dim)
    prefix_scores = torch.matmul(rows, key.prefix[0].transpose(-1, -2)).mul_(scale)
    prefix_max = prefix_scores.amax(-1, keepdim=True)
    prefix_weights = torch.exp(prefix_scores.sub_(prefix_max))
    prefix_sum = prefix_weights.sum(-1, keepdim=True)
    prefix_out = torch.matmul(prefix_weights, value.prefix[0])

    def per_row(t: torch.Tensor) -> torch.Tensor:  # [kv heads, batch x group x q, k] -> [batch, kv heads, group x q, k]
        return t.reshape(kv_heads, batch, group * q_len, t.shape[-1]).transpose(0, 1)

    prefix_max, prefix_sum, prefix_out = per_row(prefix_max), per_row(prefix_sum), per_row(prefix_out)
    # Each row's own tokens, masked for padding and causality.
    own_scores = torch.matmul(grouped, key.own.transpose(-1, -2)).mul_(scale)
    if attention_mask is not None:
        visible = attention_mask[:, :, :, prefix_len:].repeat(1, 1, group, 1)
        own_scores = own_scores.masked_fill_(~visible, float("-inf"))
    top = torch.maximum(prefix_max, own_scores.amax(-1, keepdim=True))
    own_weights = torch.exp(own_scores.sub_(top))
    prefix_part = torch.exp(prefix_max - top)
    out = (prefix_out * prefix_part + torch.matmul(own_weights, value.own)) / (
        prefix_sum * prefix_part + own_weights.sum(-1, keepdim=True)
    )
    return out.reshape(batch, heads, q_len, dim).transpose(1, 2).contiguous(), None


def _always_a_mask(*args: Any, **kwargs: Any) -> torch.Tensor | None:
    kwargs["allow_is_causal_skip"] = False
    return sdpa_mask(*args, **kwargs)


ALL_ATTENTION_FUNCTIONS.register(ATTENTION, shared_prefix_attention)
ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, _always_a_mask)


MODEL_TYPES = frozenset({"llama", "qwen2"})  # checked against the standard path (tests/backends/test_shared_prefix.py)


def supports_shared_prefix(model: Any) -> bool:
    """Whether ``model`` attends as :func:`shared_prefix_attention` computes: a checked architecture, full
    attention in every layer, sdpa or eager attention (no softcapping, sinks or position biases)."""
    config = model.config
    layer_types = getattr(config, "layer_types", None) or ()
    return (
        getattr(config, "model_type", None) in MODEL_TYPES
        and getattr(config, "_attn_implementation", None) in {"sdpa", "eager"}
        and not getattr(config, "use_sliding_window", False)
        and all(kind == "full_attention" for kind in layer_types)
    )


def common_prefix(sequences: Sequence[Sequence[int]]) -> int:
    """The number of leading tokens all ``sequences`` share.

    >>> common_prefix([[1, 2, 3], [1, 2, 4], [1, 2]])
    2
    """
    first = sequences[0]
    shared = min(len(s) for s in sequences)
    for other in sequences[1:]:
        n = 0
        while n < shared and other[n] == first[n]:
            n += 1
        shared = n
    return shared


def worth_sharing(prompts: Sequence[Sequence[int]]) -> int:
    """The prefix to share among ``prompts`` (token ids), or 0 where the standard path is the better one: a
    single prompt, a short common prefix, or own parts too long for the prefill's score tensors. At least one
    token of every prompt stays outside the prefix (the step that decodes from it).

    >>> worth_sharing([[7] * 100 + [1], [7] * 100 + [2, 3]]), worth_sharing([[7] * 10 + [1], [7] * 10 + [2]])
    (100, 0)
    """
    if len(prompts) < 2:
        return 0
    shared = min(common_prefix(prompts), min(len(p) for p in prompts) - 1)
    if shared < MIN_PREFIX_TOKENS or max(len(p) for p in prompts) - shared > MAX_OWN_TOKENS:
        return 0
    return shared


def prefix_groups(prompts: Sequence[Sequence[int]], batch_size: int) -> tuple[list[tuple[list[int], int]], list[int]]:
    """Batches of up to ``batch_size`` prompts (by index) that share a prefix worth sharing, each with that
    prefix's length, and the indices of the prompts left for the standard path. Prompts are taken in token
    order, so those of one database's schema are neighbours."""
    groups: list[tuple[list[int], int]] = []
    alone: list[int] = []
    current: list[int] = []
    shared = 0

    def close() -> None:
        if len(current) > 1:
            groups.append((list(current), shared))
        else:
            alone.extend(current)

    for index in sorted(range(len(prompts)), key=lambda i: list(prompts[i])):
        candidate = worth_sharing([prompts[i] for i in [*current, index]]) if len(current) < batch_size else 0
        if current and candidate == 0:
            close()
            current, shared = [index], 0
        else:
            current, shared = [*current, index], candidate
    close()
    return groups, sorted(alone)


def generate_with_shared_prefix(
    model: Any, prompts: Sequence[Sequence[int]], prefix_len: int, pad_token_id: int, **generate_kwargs: Any
) -> list[list[int]]:
    """Greedy or sampled generation (``generate_kwargs`` as for ``model.generate``, one sequence per prompt) of
    ``prompts`` that share their first ``prefix_len`` tokens; returns each prompt's new tokens, padding and all
    (the caller decodes with special tokens skipped)."""
    device = model.device
    prefix = torch.tensor([list(prompts[0][:prefix_len])], device=device)
    with torch.inference_mode():
        computed = model(input_ids=prefix, use_cache=True).cache
    own_lengths = [len(p) - prefix_len for p in prompts]
    width = max(own_lengths)
    max_new = int(generate_kwargs["max_new_tokens"])
    layers = [SharedPrefixLayer(layer.keys, layer.values, capacity=width + max_new) for layer in computed.layers]
    input_ids = torch.full((len(prompts), prefix_len + width), pad_token_id, dtype=torch.long, device=device)
    attention_mask = torch.zeros_like(input_ids)
    input_ids[:, :prefix_len] = prefix
    attention_mask[:, :prefix_len] = 1
    for row, (prompt, own) in enumerate(zip(prompts, own_lengths, strict=True)):
        if own:
            input_ids[row, -own:] = torch.tensor(list(prompt[prefix_len:]), device=device)
            attention_mask[row, -own:] = 1
    previous = model.config._attn_implementation
    model.config._attn_implementation = ATTENTION
    try:
        with torch.inference_mode():
            output = model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                cache=Cache(layers=layers),
                pad_token_id=pad_token_id,
                **generate_kwargs,
            )
    finally:
        model.config._attn_implementation = previous
    return [row.tolist() for row in output[:, input_ids.shape[1] :]]
