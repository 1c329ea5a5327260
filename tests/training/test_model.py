"""Model construction from the size registry."""

from __future__ import annotations

from typing import Any

import pytest

from progress_sql.errors import ConfigError
from progress_sql.training.model import MODEL_SIZES, build_model, parameter_count


def test_tiny_model_shape_and_ids(tokenizer: Any) -> None:
    model = build_model(tokenizer, "tiny", seed=0)
    config = model.config
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (128, 2, 4)
    assert config.intermediate_size == 512
    assert config.max_position_embeddings == 512
    assert config.tie_word_embeddings
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight
    assert config.vocab_size == len(tokenizer)
    assert (config.pad_token_id, config.eos_token_id, config.bos_token_id) == (
        tokenizer.pad_token_id,
        tokenizer.eos_token_id,
        tokenizer.bos_token_id,
    )
    # ~0.7M with a ~1.4k vocabulary (the feasibility prototype: 0.72M with 1.5k).
    assert 550_000 <= parameter_count(model) <= 900_000


def test_small_model_and_seed(tokenizer: Any, torch_one_thread: Any) -> None:
    small = build_model(tokenizer, "small")
    assert 4_000_000 <= parameter_count(small) <= 6_000_000
    first, second = build_model(tokenizer, seed=1), build_model(tokenizer, seed=1)
    assert torch_one_thread.equal(first.model.embed_tokens.weight, second.model.embed_tokens.weight)


def test_unknown_size_is_a_config_error(tokenizer: Any) -> None:
    with pytest.raises(ConfigError, match="tiny"):
        build_model(tokenizer, "huge")
    assert set(MODEL_SIZES) == {"tiny", "small"}
