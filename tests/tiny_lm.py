"""A tiny tokenizer and Qwen2 model built in the test process (nothing downloaded).

Import only from tests that have already skipped without the [trl] extra (torch, transformers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FORMAT_TOKENS = ["<think>", "</think>", "<sql>", "</sql>"]


def tiny_tokenizer(corpus: Sequence[str], vocab_size: int = 500) -> Any:
    """Byte-level BPE over ``corpus`` (every byte encodable), pad != eos, left padding, format tags."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # no <unk> in SQL
            show_progress=False,
        ),
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>", unk_token="<unk>"
    )
    tokenizer.add_tokens(FORMAT_TOKENS)
    tokenizer.padding_side = "left"
    return tokenizer


def tiny_model(tokenizer: Any, seed: int = 0) -> Any:
    """A 2-layer Qwen2 with hidden size 32 and random weights."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    return transformers.Qwen2ForCausalLM(config)
