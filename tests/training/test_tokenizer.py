"""The locally trained tokenizer: special tokens, format tags, padding side, save / load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from progress_sql.odt import CATALOGUE
from progress_sql.prompts import CompactFormat
from progress_sql.training.tokenizer import FORMAT_TOKENS, SPECIAL_TOKENS, framing_texts, train_tokenizer


def test_special_and_format_tokens_are_single_tokens(tokenizer: Any) -> None:
    for token in (*SPECIAL_TOKENS, *FORMAT_TOKENS):
        ids = tokenizer(token, add_special_tokens=False).input_ids
        assert len(ids) == 1, token
        assert tokenizer.convert_ids_to_tokens(ids) == [token]
    assert tokenizer.pad_token == "<pad>"
    assert tokenizer.eos_token == "<eos>"
    assert tokenizer.bos_token == "<bos>"
    assert tokenizer.unk_token == "<unk>"
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    assert tokenizer.padding_side == "left"
    assert 1000 <= len(tokenizer) <= 2048


def test_a_tiny_vocabulary_still_keeps_pad_apart_from_eos_and_the_tags_whole() -> None:
    tokenizer = train_tokenizer(["SELECT count(*) FROM singer", "How many singers are there?"], vocab_size=400)
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    assert len(tokenizer("<sql>").input_ids) == 1


def test_nothing_is_added_around_a_text(tokenizer: Any) -> None:
    fmt = CompactFormat()
    text = fmt.prompt("pets_1", "How many pets?") + fmt.answer("SELECT count(*) FROM pets")
    ids = tokenizer(text).input_ids
    assert tokenizer.decode(ids) == text
    assert tokenizer.eos_token_id not in ids
    assert tokenizer.bos_token_id not in ids


def test_feedback_codes_round_trip(tokenizer: Any) -> None:
    codes = " ".join(spec.name for spec in CATALOGUE)
    text = f"\nF: {codes}\nA:"
    ids = tokenizer(text, add_special_tokens=False).input_ids
    assert tokenizer.decode(ids) == text
    assert tokenizer.unk_token_id not in ids


def test_left_padding(tokenizer: Any) -> None:
    batch = tokenizer(["Q [a] b\nA:", "Q [pets_1] How many pets are there?\nA:"], padding=True)
    first = batch["input_ids"][0]
    assert first[0] == tokenizer.pad_token_id
    assert batch["attention_mask"][0][0] == 0
    assert first[-1] != tokenizer.pad_token_id


def test_save_and_load_round_trip(tokenizer: Any, tmp_path: Path) -> None:
    import transformers

    from progress_sql.training.model import build_model

    # Saved beside the model, as a checkpoint is: AutoTokenizer would build Qwen2's tokenizer there.
    build_model(tokenizer).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = transformers.PreTrainedTokenizerFast.from_pretrained(tmp_path)
    text = "Q [concert_singer] Show the name of every singer.\nA: <think></think><sql>SELECT T1.singer_id FROM x</sql>"
    assert loaded(text).input_ids == tokenizer(text).input_ids
    assert (loaded.pad_token_id, loaded.eos_token_id, loaded.bos_token_id) == (
        tokenizer.pad_token_id,
        tokenizer.eos_token_id,
        tokenizer.bos_token_id,
    )
    assert loaded.padding_side == "left"
    assert len(loaded) == len(tokenizer)


def test_identifiers_stay_whole_and_answers_fit_an_rl_turn(tokenizer: Any, dataset: Any) -> None:
    ids = tokenizer(" <sql>SELECT T1.singer_id FROM singer_in_concert", add_special_tokens=False).input_ids
    assert "Ġsinger_in_concert" in tokenizer.convert_ids_to_tokens(ids)
    fmt = CompactFormat()
    # Every template answer, eos included, fits the 48 new tokens of an RL turn.
    longest = max(len(tokenizer(fmt.answer(e.gold_sql)).input_ids) + 1 for e in dataset.train)
    assert longest <= 48


def test_the_read_framing_leaves_out_the_write_tags_and_a_write_run_adds_them() -> None:
    """The embedded default trains on read questions: its tokenizer's corpus holds only the tag codes
    the read ODT can emit, so its vocabulary is the one it had before the DML tags existed."""
    dml = {spec.name for spec in CATALOGUE if spec.category == "DML"}
    assert len(dml) == 10

    def codes(texts: list[str]) -> set[str]:
        every = texts[-1]  # "\nF: CODE CODE ...\nA:", every code of the framing in one line
        return set(every.removeprefix("\nF: ").removesuffix("\nA:").split())

    read = codes(framing_texts())
    assert read == {spec.name for spec in CATALOGUE if spec.category != "DML"} | {"VALUES", "PARSE_ERROR"}
    assert codes(framing_texts(write_tags=True)) == read | dml
    corpus = ["SELECT count(*) FROM singer", "UPDATE singer SET age = 1 WHERE singer_id = 2"]
    plain = train_tokenizer(corpus, vocab_size=600).backend_tokenizer.to_str()
    assert train_tokenizer(corpus, vocab_size=600, write_tags=True).backend_tokenizer.to_str() != plain
