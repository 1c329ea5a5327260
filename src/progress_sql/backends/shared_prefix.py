"""Decoding prompts that begin with the same tokens (the instructions and one database's schema) with that prefix
computed and stored once, and a fixed number of rows kept busy: the prefix's keys and values live in one copy
that each attention step reads once for all rows (cascade attention: the prefix and each row's own tokens are
attended separately and their softmax parts combined), and a row whose answer has ended takes the next prompt at
once (its own tokens prefilled alone), instead of waiting, as a padded batch does, for its longest answer.

On a CPU a decoding step of a small model is bound by reading the cache and the weights: a left-padded batch of
16 of the paper's prompts (up to 2,400 tokens of schema) reads 16 copies of the same schema's keys and values at
every new token, and decodes to its longest answer (1,024 tokens in every batch of the paper-style run, for
answers of 440 on average) (docs/benchmarks.md#a-shared-prompt-prefix-on-a-cpu).
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from transformers.cache_utils import Cache, CacheLayerMixin
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

ATTENTION = "progress_sql_shared_prefix"
MIN_PREFIX_TOKENS = 64  # a shorter common prefix saves less than the separate pass costs
MAX_OWN_TOKENS = 512  # bounds a row's own part (its prefill's scores: own tokens x prefix)


class Halves(NamedTuple):
    """A layer's keys (or values) as attention reads them: the one prefix ``[1, kv heads, P, d]``; the rows'
    own tokens ``[rows, kv heads, W, d]``; ``starts[i]``, where row ``i``'s queries begin among its own tokens
    (query ``t`` of row ``i`` sees own tokens ``0 .. starts[i] + t``)."""

    prefix: torch.Tensor
    own: torch.Tensor
    starts: torch.Tensor


@dataclass
class Cursor:
    """Where the next forward pass writes: the rows (a slice of the cache's rows), the own-token position each
    row's first new token goes to, and how many own tokens attention reads (the rows' longest, new ones included)."""

    rows: slice = field(default_factory=lambda: slice(None))
    starts: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    width: int = 0


class SharedPrefixLayer(CacheLayerMixin):  # type: ignore[misc]
    """One layer's cache: the prefix's keys and values once, each row's own tokens in buffers allocated once
    (``rows`` x ``capacity`` tokens) and written in place where the shared ``cursor`` says."""

    is_sliding = False
    is_compileable = False

    def __init__(
        self, prefix_keys: torch.Tensor, prefix_values: torch.Tensor, rows: int, capacity: int, cursor: Cursor
    ) -> None:
        super().__init__()
        self.prefix_keys, self.prefix_values, self.cursor = prefix_keys, prefix_values, cursor
        _, heads, _, key_dim = prefix_keys.shape
        self.own_keys = prefix_keys.new_zeros((rows, heads, capacity, key_dim))
        self.own_values = prefix_values.new_zeros((rows, heads, capacity, prefix_values.shape[-1]))
        self.device = prefix_keys.device
        self.is_initialized = True

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        return None  # allocated in __init__

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        cursor = self.cursor
        rows, new = key_states.shape[0], key_states.shape[-2]
        positions = cursor.starts[:, None] + torch.arange(new, device=self.device)  # [rows, new]
        which = torch.arange(rows, device=self.device)[:, None]
        own_keys, own_values = self.own_keys[cursor.rows], self.own_values[cursor.rows]
        own_keys[which, :, positions] = key_states.transpose(1, 2)
        own_values[which, :, positions] = value_states.transpose(1, 2)
        width = cursor.width
        return (
            Halves(self.prefix_keys, own_keys[:, :, :width], cursor.starts),
            Halves(self.prefix_values, own_values[:, :, :width], cursor.starts),
        )

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.prefix_keys.shape[-2] + self.cursor.width, 0

    def get_seq_length(self) -> int:
        return int(self.prefix_keys.shape[-2])

    def get_max_length(self) -> int:
        return -1


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
    """Attention of ``query`` ``[rows, heads, q, d]`` over the shared prefix (every query comes after all of it)
    and each row's own tokens up to its own position (``key.starts``). Returns ``[rows, q, heads, d]``, as
    transformers' attention functions do; ``attention_mask`` is not used (the cache knows each row's extent)."""
    if query.dtype != torch.float32:  # bf16 / fp16 weights: the softmax parts are combined in fp32
        wide = shared_prefix_attention(
            module,
            query.float(),
            Halves(key.prefix.float(), key.own.float(), key.starts),
            Halves(value.prefix.float(), value.own.float(), value.starts),
            attention_mask,
            scaling,
        )[0]
        return wide.to(query.dtype), None
    batch, heads, q_len, dim = query.shape
    kv_heads = key.prefix.shape[1]
    group = heads // kv_heads  # query head h reads kv head h // group (transformers' repeat_kv order)
    scale = dim**-0.5 if scaling is None else scaling
    grouped = query.reshape(batch, kv_heads, group * q_len, dim)
    # The prefix: every row's queries against the one copy, [kv heads, rows x group x q, P].
    flat = grouped.transpose(0, 1).reshape(kv_heads, batch * group * q_len, dim)
    prefix_scores = torch.matmul(flat, key.prefix[0].transpose(-1, -2)).mul_(scale)
    prefix_max = prefix_scores.amax(-1, keepdim=True)
    prefix_weights = torch.exp(prefix_scores.sub_(prefix_max))
    prefix_sum = prefix_weights.sum(-1, keepdim=True)
    prefix_out = torch.matmul(prefix_weights, value.prefix[0])

    def per_row(t: torch.Tensor) -> torch.Tensor:  # [kv heads, rows x group x q, k] -> [rows, kv heads, group x q, k]
        return t.reshape(kv_heads, batch, group * q_len, t.shape[-1]).transpose(0, 1)

    prefix_max, prefix_sum, prefix_out = per_row(prefix_max), per_row(prefix_sum), per_row(prefix_out)
    # Each row's own tokens, up to the query's own position.
    own_scores = torch.matmul(grouped, key.own.transpose(-1, -2)).mul_(scale)
    last = key.starts[:, None] + torch.arange(q_len, device=query.device)  # [rows, q]
    visible = torch.arange(key.own.shape[-2], device=query.device) <= last[:, :, None]  # [rows, q, W]
    own_scores.masked_fill_(~visible.repeat(1, group, 1)[:, None], float("-inf"))
    top = torch.maximum(prefix_max, own_scores.amax(-1, keepdim=True))
    own_weights = torch.exp(own_scores.sub_(top))
    prefix_part = torch.exp(prefix_max - top)
    out = (prefix_out * prefix_part + torch.matmul(own_weights, value.own)) / (
        prefix_sum * prefix_part + own_weights.sum(-1, keepdim=True)
    )
    return out.reshape(batch, heads, q_len, dim).transpose(1, 2).contiguous(), None


def _no_mask(*args: Any, **kwargs: Any) -> None:
    return None  # the attention masks from the cache's cursor


ALL_ATTENTION_FUNCTIONS.register(ATTENTION, shared_prefix_attention)
ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, _no_mask)


MODEL_TYPES = frozenset({"llama", "qwen2"})  # checked against the standard path (tests/backends/test_shared_prefix.py)


def supports_shared_prefix(model: Any) -> bool:
    """Whether ``model`` attends as :func:`shared_prefix_attention` computes: a checked architecture, full
    attention in every layer, sdpa or eager attention (no softcapping, sinks or position biases), and a
    transformers whose models take and return their cache as ``cache`` (the loop's API; transformers
    5.17, a GPU machine's and ``[trl-gpu]``'s, still calls it ``past_key_values``: there the standard
    left-padded path runs)."""
    config = model.config
    layer_types = getattr(config, "layer_types", None) or ()
    return (
        _takes_cache(model)
        and getattr(config, "model_type", None) in MODEL_TYPES
        and getattr(config, "_attn_implementation", None) in {"sdpa", "eager"}
        and not getattr(config, "use_sliding_window", False)
        and all(kind == "full_attention" for kind in layer_types)
    )


def _takes_cache(model: Any) -> bool:
    """Whether ``model``'s forward takes the ``cache`` argument (transformers releases that renamed
    ``past_key_values``)."""
    try:
        return "cache" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # no signature to read: not a model this loop was checked against
        return False


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
    single prompt, a short common prefix, or an own part too long. At least one token of every prompt stays
    outside the prefix (the row's own prefill gives its first answer token).

    >>> worth_sharing([[7] * 100 + [1], [7] * 100 + [2, 3]]), worth_sharing([[7] * 10 + [1], [7] * 10 + [2]])
    (100, 0)
    """
    if len(prompts) < 2:
        return 0
    shared = min(common_prefix(prompts), min(len(p) for p in prompts) - 1)
    if shared < MIN_PREFIX_TOKENS or max(len(p) for p in prompts) - shared > MAX_OWN_TOKENS:
        return 0
    return shared


def prefix_groups(prompts: Sequence[Sequence[int]]) -> tuple[list[tuple[list[int], int]], list[int]]:
    """The prompts (by index) in groups that share a prefix worth sharing, each with that prefix's length, and
    the indices of the prompts left for the standard path. Prompts are taken in token order, so those of one
    database's schema are neighbours (and a sorted run's common prefix is its first and last prompts')."""
    groups: list[tuple[list[int], int]] = []
    alone: list[int] = []
    current: list[int] = []
    shared = longest = 0

    def close() -> None:
        if len(current) > 1:
            groups.append((current, shared))
        else:
            alone.extend(current)

    for index in sorted(range(len(prompts)), key=lambda i: list(prompts[i])):
        prompt = prompts[index]
        if current:
            together = min(shared, common_prefix([prompts[current[0]], prompt]), len(prompt) - 1)
            if together >= MIN_PREFIX_TOKENS and max(longest, len(prompt)) - together <= MAX_OWN_TOKENS:
                current, shared, longest = [*current, index], together, max(longest, len(prompt))
                continue
        close()
        current, shared, longest = [index], len(prompt) - 1, len(prompt)
    close()
    return groups, sorted(alone)


@dataclass(frozen=True, slots=True)
class Decoding:
    """How the next token is chosen: greedy (``temperature`` 0) or sampled at ``temperature`` from the
    smallest set of tokens whose probability reaches ``top_p`` (transformers' top-p rule)."""

    max_new_tokens: int
    eos_token_id: int
    temperature: float = 0.0
    top_p: float = 1.0

    def choose(self, logits: torch.Tensor) -> torch.Tensor:
        if self.temperature <= 0:
            return logits.argmax(-1)
        return torch.multinomial(self.sampling_scores(logits).softmax(-1), 1).squeeze(-1)

    def sampling_scores(self, logits: torch.Tensor) -> torch.Tensor:
        """The scores sampled from: ``logits`` over the temperature, those outside the top-p set at -inf."""
        scores = logits.float() / self.temperature
        if self.top_p < 1.0:
            ordered, order = torch.sort(scores, descending=False)
            drop = ordered.softmax(-1).cumsum(-1) <= 1 - self.top_p
            drop[..., -1] = False  # keep at least the most likely token
            scores = scores.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
        return scores


def decode_shared_prefix(
    model: Any,
    prompts: Sequence[Sequence[int]],
    prefix_len: int,
    rows: int,
    decoding: Decoding,
    finished: Callable[[int], object] = lambda index: None,
) -> list[list[int]]:
    """Each prompt's new tokens (its end-of-sequence token included when it came), for ``prompts`` that share
    their first ``prefix_len`` tokens, decoded ``rows`` at a time: the prefix once, then each prompt's own tokens
    prefilled when a row is free, every busy row advanced one token a step. ``finished(index)`` is called as
    each prompt's answer ends (a progress bar's step)."""
    device = model.device
    rows = min(rows, len(prompts))
    capacity = max(len(p) for p in prompts) - prefix_len + decoding.max_new_tokens
    cursor = Cursor()
    answers: list[list[int]] = [[] for _ in prompts]
    waiting = deque(range(len(prompts)))
    owner: list[int | None] = [None] * rows
    filled = torch.zeros(rows, dtype=torch.long, device=device)  # own tokens in each row's cache
    last = torch.zeros(rows, dtype=torch.long, device=device)  # each row's latest token

    def keep(row: int, token: int) -> None:
        answer = answers[owner[row]]  # type: ignore[index]
        answer.append(token)
        last[row] = token
        if token == decoding.eos_token_id or len(answer) >= decoding.max_new_tokens:
            finished(owner[row])  # type: ignore[arg-type]
            owner[row] = None
            filled[row] = 0

    def forward(input_ids: torch.Tensor, positions: torch.Tensor, cache: Cache) -> torch.Tensor:
        output = model(input_ids=input_ids, position_ids=positions, cache=cache, use_cache=True, logits_to_keep=1)
        return output.logits[:, -1]

    previous = model.config._attn_implementation
    with torch.inference_mode():
        prefix = torch.tensor([list(prompts[0][:prefix_len])], device=device)
        computed = model(input_ids=prefix, use_cache=True).cache
        layers = [SharedPrefixLayer(c.keys, c.values, rows, capacity, cursor) for c in computed.layers]
        cache = Cache(layers=layers)
        model.config._attn_implementation = ATTENTION
        try:
            while True:
                for row in range(rows):
                    while owner[row] is None and waiting:  # an answer can end with its first token
                        index = waiting.popleft()
                        own = torch.tensor([list(prompts[index][prefix_len:])], device=device)
                        cursor.rows, cursor.width = slice(row, row + 1), own.shape[1]
                        cursor.starts = torch.zeros(1, dtype=torch.long, device=device)
                        logits = forward(own, prefix_len + torch.arange(own.shape[1], device=device)[None], cache)
                        owner[row], filled[row] = index, own.shape[1]
                        keep(row, int(decoding.choose(logits)[0]))
                busy = [row for row in range(rows) if owner[row] is not None]
                if not busy:
                    break
                cursor.rows, cursor.starts, cursor.width = slice(None), filled.clone(), int(filled.max()) + 1
                tokens = decoding.choose(forward(last[:, None], (prefix_len + filled)[:, None], cache)).tolist()
                filled += 1
                for row in busy:
                    keep(row, tokens[row])
                for row in range(rows):
                    if owner[row] is None:
                        filled[row] = 0
        finally:
            model.config._attn_implementation = previous
    return answers
