"""The tiny Qwen2-style causal LM of the default run, built from a config (no download).

Sizes are a registry (:data:`MODEL_SIZES`); ``tiny`` (~0.7M parameters with a 2k vocabulary) is
the measured default on a CPU, ``small`` (~5M) is for runs of ten minutes or more
(docs/training.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from progress_sql.registry import lookup


@dataclass(frozen=True, slots=True)
class ModelSize:
    """The shape of a Qwen2 decoder."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int = 512


MODEL_SIZES: Mapping[str, ModelSize] = {
    "tiny": ModelSize(hidden=128, layers=2, heads=4, ffn=512),
    "small": ModelSize(hidden=256, layers=4, heads=4, ffn=1024),
}


def build_model(tokenizer: Any, size: str = "tiny", seed: int = 0) -> Any:
    """A freshly initialized ``transformers.Qwen2ForCausalLM`` of ``size`` for ``tokenizer``:
    tied embeddings, pad / eos / bos ids from the tokenizer, weights drawn from ``seed``."""
    shape = lookup(MODEL_SIZES, size, "model size")
    import torch
    import transformers

    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.ffn,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.heads,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    torch.manual_seed(seed)
    model = transformers.Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


def parameter_count(model: Any) -> int:
    """Distinct parameters (tied embeddings counted once)."""
    return int(sum(p.numel() for p in model.parameters()))


__all__ = ["MODEL_SIZES", "ModelSize", "build_model", "parameter_count"]
