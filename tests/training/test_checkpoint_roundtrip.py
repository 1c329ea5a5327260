"""A saved run folder (model config + tokenizer) reloads with the same tokenization."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="training needs the [trl] extra")

from progress_sql.backends.hf import load_tokenizer
from progress_sql.training.model import build_model
from progress_sql.training.tokenizer import train_tokenizer


def test_tokenizer_survives_a_save_next_to_a_qwen2_config(tmp_path: Path) -> None:
    tokenizer = train_tokenizer(["SELECT T1.singer_id FROM singer AS T1 WHERE Country = 'France'"] * 5, vocab_size=400)
    build_model(tokenizer).save_pretrained(tmp_path)  # config.json says model_type qwen2
    tokenizer.save_pretrained(tmp_path)
    text = " <think></think><sql>SELECT T1.singer_id FROM singer AS T1</sql>"
    reloaded = load_tokenizer(str(tmp_path))
    assert reloaded(text)["input_ids"] == tokenizer(text)["input_ids"]
    assert reloaded.pad_token_id == tokenizer.pad_token_id
    assert reloaded.padding_side == "left"
