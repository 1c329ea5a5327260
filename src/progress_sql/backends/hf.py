"""Local generation with Hugging Face transformers (the ``[trl]`` extra), the chat template or plain
role lines (docs/environment.md#generation-backends-and-progress-sql-rollout)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from progress_sql.backends.base import GenerationConfig
from progress_sql.models import load_causal_lm, resolve_model
from progress_sql.prompts import Message


def render_plain(messages: Sequence[Message]) -> str:
    """A chat rendered without a template, ending with the assistant's cue.

    >>> render_plain([{"role": "user", "content": "hi"}])
    'user: hi\\nassistant:'
    """
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"


def load_tokenizer(path: str) -> Any:
    """Load a tokenizer; a plain tokenizers-backed one (as ``progress-sql train`` saves) is loaded as
    is: ``AutoTokenizer`` would swap in the model type's own pre-tokenizer (Qwen2's for a qwen2 model
    folder) and silently change the tokenization."""
    import json
    from pathlib import Path

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    config = Path(path) / "tokenizer_config.json"
    if config.is_file():
        declared = json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class")
        if declared in {"TokenizersBackend", "PreTrainedTokenizerFast"}:
            return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


@functools.cache
def static_cache_keeps_each_dtype() -> bool:
    """Whether the installed transformers' static KV cache stores keys and values each in its own dtype.

    Under bf16 autocast (accelerate's mixed precision wraps a prepared model's forward in it) a Qwen2-style
    layer's keys leave the rotary embedding in fp32 while its values stay bf16. transformers 5.24 allocates
    each in its own dtype; up to 5.23 (5.17 on the GPU machine, [trl-gpu]'s pin) both take the keys' dtype and
    the first update fails in ``index_copy_`` (the GPU check of 2026-12-06). Probed on two one-element
    tensors rather than read from the version, so a backport counts."""
    import torch
    from transformers.cache_utils import StaticLayer

    layer = StaticLayer(max_cache_len=1)
    try:
        layer.lazy_initialization(torch.zeros(1, 1, 1, 1), torch.zeros(1, 1, 1, 1, dtype=torch.bfloat16))
    except (TypeError, AttributeError, RuntimeError):  # another signature: assume the older behaviour
        return False
    return bool(layer.values.dtype == torch.bfloat16)


def runs_under_autocast(model: Any) -> bool:
    """Whether ``model``'s forward runs under autocast: accelerate's mixed precision replaces a prepared model's
    forward with an autocast-wrapped one and keeps the original as ``_original_forward``; or autocast is on
    around the call for the model's device."""
    import torch

    device = getattr(getattr(model, "device", None), "type", "cpu")
    return getattr(model, "_original_forward", None) is not None or torch.is_autocast_enabled(device)


class TransformersBackend:
    """Generates with a causal LM and its tokenizer on CPU or GPU: conversations in left-padded batches
    of up to ``batch_size`` (sorted by prompt length, so that a batch pads little), each answer decoded
    with a KV cache, ``config.n`` sequences per conversation.

    The cache is transformers' static one by default (``cache_implementation="static"``: allocated once per
    batch at its final length). ``generate``'s default, the dynamic cache, concatenates every layer's keys and
    values at every new token: on a CPU that copying took 63% of a batch of the paper's 1,024-token answers,
    a step 2.3x the static cache's by the 550th token (docs/benchmarks.md#the-kv-cache-on-a-cpu); the greedy
    answers are the same. ``None`` keeps the model's own default. A model whose forward runs under autocast
    gets the dynamic cache where the installed transformers' static one cannot hold keys and values of two
    dtypes (:func:`static_cache_keeps_each_dtype`).

    Prompts that begin with the same tokens (the instructions and one database's schema) are decoded together
    with that prefix computed once and stored once, ``batch_size`` rows kept busy (a row whose answer ends takes
    the next prompt): :mod:`progress_sql.backends.shared_prefix`. ``share_prefix=False``, or a model that module
    has not been checked against, keeps every batch on the path above."""

    name = "transformers"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        use_chat_template: bool | None = None,
        batch_size: int = 16,
        cache_implementation: str | None = "static",
        share_prefix: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.cache_implementation = cache_implementation
        if share_prefix:
            from progress_sql.backends.shared_prefix import supports_shared_prefix

            share_prefix = supports_shared_prefix(model)
        self.share_prefix = share_prefix
        if tokenizer.pad_token_id is None:  # left padding needs a pad token; eos is the usual stand-in
            tokenizer.pad_token = tokenizer.eos_token
        has_template = bool(getattr(tokenizer, "chat_template", None))
        self.use_chat_template = has_template if use_chat_template is None else use_chat_template

    def _cache(self) -> str | None:
        """The cache this call generates with: the configured one, unless it is the static cache and that
        would fail under the model's autocast."""
        static = bool(self.cache_implementation) and "static" in str(self.cache_implementation)
        if static and runs_under_autocast(self.model) and not static_cache_keeps_each_dtype():
            return None
        return self.cache_implementation

    @property
    def draws(self) -> str:
        implementation = self._cache()
        cache = f"{implementation} KV cache" if implementation else "KV cache"
        shared = "; prompts sharing a prefix decoded with it stored once, rows refilled" if self.share_prefix else ""
        return (
            f"batched generate calls (left-padded, up to {self.batch_size} conversations, {cache}) "
            f"with num_return_sequences=n{shared}"
        )

    @classmethod
    def from_pretrained(
        cls, path: str, *, device: str = "cpu", batch_size: int = 16, cache_implementation: str | None = "static"
    ) -> TransformersBackend:
        """Load a model (a folder, a packaged model's name or a cached hub id:
        :func:`progress_sql.models.resolve_model`) with its tokenizer, fp32 weights."""
        resolved = resolve_model(path)
        tokenizer = load_tokenizer(resolved)
        model = load_causal_lm(resolved, device)
        return cls(model, tokenizer, batch_size=batch_size, cache_implementation=cache_implementation)

    def _prompt(self, messages: Sequence[Message]) -> str:
        if self.use_chat_template:
            text = self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
            return str(text)
        return render_plain(messages)

    def generate(self, conversations: Sequence[Sequence[Message]], config: GenerationConfig) -> list[list[str]]:
        return self.generate_reporting(conversations, config, lambda k: None)

    def generate_reporting(
        self, conversations: Sequence[Sequence[Message]], config: GenerationConfig, answered: Callable[[int], object]
    ) -> list[list[str]]:
        """:meth:`generate`, calling ``answered(k)`` as ``k`` more conversations have all their answers."""
        import torch

        if config.seed is not None:
            torch.manual_seed(config.seed)
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        sampling = config.temperature > 0
        decoding: dict[str, Any] = {
            "do_sample": sampling,
            "temperature": config.temperature if sampling else None,
            "top_p": config.top_p if sampling else None,
            "top_k": 0 if sampling else None,
            "max_new_tokens": config.max_tokens,
            "eos_token_id": eos,
        }
        prompts = [self._prompt(messages) for messages in conversations]
        tokens = [self.tokenizer(p).input_ids for p in prompts]
        results: list[list[str]] = [[] for _ in prompts]
        groups, alone = self._groups(tokens)
        implementation = self._cache()
        was_training = self.model.training
        self.model.eval()
        try:
            for group, prefix in groups:
                from progress_sql.backends.shared_prefix import Decoding, decode_shared_prefix

                rows = [tokens[i] for i in group for _ in range(config.n)]
                ends = eos if eos is not None else -1  # no end-of-sequence token: every answer runs to max_tokens
                choice = Decoding(config.max_tokens, ends, config.temperature, config.top_p)
                pending = [config.n] * len(group)  # answers still running, per conversation of the group

                def finished(index: int, pending: list[int] = pending) -> None:  # index into rows
                    pending[index // config.n] -= 1
                    if not pending[index // config.n]:
                        answered(1)

                new_tokens = decode_shared_prefix(self.model, rows, prefix, self.batch_size, choice, finished)
                self._keep(results, group, self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True), config.n)
            order = sorted(alone, key=lambda i: len(tokens[i]))
            for start in range(0, len(order), self.batch_size):
                chosen = order[start : start + self.batch_size]
                encoded = self.tokenizer(
                    [prompts[i] for i in chosen], return_tensors="pt", padding=True, padding_side="left"
                ).to(self.model.device)
                with torch.inference_mode():
                    output = self.model.generate(
                        **encoded,
                        **decoding,
                        num_return_sequences=config.n,
                        pad_token_id=pad,
                        **({"cache_implementation": implementation} if implementation else {}),
                    )
                new_tokens = output[:, encoded["input_ids"].shape[1] :]
                self._keep(results, chosen, self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True), config.n)
                answered(len(chosen))
        finally:
            self.model.train(was_training)
        return results

    def _groups(self, tokens: Sequence[Sequence[int]]) -> tuple[list[tuple[list[int], int]], list[int]]:
        """Batches of prompts sharing a prefix (with its length) and the prompts for the standard path."""
        if not self.share_prefix:
            return [], list(range(len(tokens)))
        from progress_sql.backends.shared_prefix import prefix_groups

        return prefix_groups(tokens)

    @staticmethod
    def _keep(results: list[list[str]], chosen: Sequence[int], texts: Sequence[str], n: int) -> None:
        for position, i in enumerate(chosen):
            results[i] = list(texts[position * n : (position + 1) * n])
