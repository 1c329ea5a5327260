"""A tiny tokenizer and Qwen2 model built here (nothing downloaded) for real TRL steps on CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_database

torch = pytest.importorskip("torch", reason="TRL tests need the [trl] extra")
transformers = pytest.importorskip("transformers", reason="TRL tests need the [trl] extra")
pytest.importorskip("trl", reason="TRL tests need the [trl] extra")

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

FORMAT_TOKENS = ["<think>", "</think>", "<sql>", "</sql>"]


@pytest.fixture(scope="session")
def tiny_tokenizer(music_dir: Path) -> Any:
    corpus = [
        "Q [music] How many singers do we have?\nA: <think></think><sql>SELECT count(*) FROM singer</sql>",
        "\nF: SELECT_ERROR WHERE_MISSING JOIN_MISSING PARSE_ERROR VALUES\nA:",
        "SELECT name , country , age FROM singer WHERE country = 'France' AND age > 40 GROUP BY country",
        "SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id ORDER BY count(*) DESC",
    ] * 10
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=500,
            special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable: no <unk> in SQL
            show_progress=False,
        ),
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>", unk_token="<unk>"
    )
    tokenizer.add_tokens(FORMAT_TOKENS)
    tokenizer.padding_side = "left"
    return tokenizer


@pytest.fixture
def tiny_model(tiny_tokenizer: Any) -> Any:
    torch.manual_seed(0)
    config = transformers.Qwen2Config(
        vocab_size=len(tiny_tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=tiny_tokenizer.pad_token_id,
        eos_token_id=tiny_tokenizer.eos_token_id,
        bos_token_id=tiny_tokenizer.bos_token_id,
    )
    return transformers.Qwen2ForCausalLM(config)


@pytest.fixture(scope="session")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("databases"))
