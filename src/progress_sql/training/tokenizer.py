"""A byte-level BPE tokenizer trained locally on the run's own text (no download), identifiers kept
whole, the answer tags and ODT codes as single known pieces. Reload it with
``PreTrainedTokenizerFast.from_pretrained`` (:func:`progress_sql.backends.hf.load_tokenizer`), never
``AutoTokenizer`` (it swaps the pre-tokenizer): docs/architecture.md#the-tokenizer-trainingtokenizerpy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from progress_sql.odt import CATALOGUE
from progress_sql.prompts import CompactFormat
from progress_sql.types import Example

#: Pre-token pattern: an identifier, a number, a run of other symbols (each with an optional leading
#: space), or whitespace.
PRE_TOKEN_PATTERN = r"\s?[A-Za-z_][A-Za-z0-9_]*|\s?\d+|\s?[^\sA-Za-z0-9_]+|\s+"
SPECIAL_TOKENS: tuple[str, ...] = ("<pad>", "<eos>", "<bos>", "<unk>")
FORMAT_TOKENS: tuple[str, ...] = ("<think>", "</think>", "<sql>", "</sql>")


def framing_texts(*, write_tags: bool = False) -> list[str]:
    """Text the tokenizer must know whatever the data: the compact format's framing and each tag code
    the ODT can emit on the run's tasks. ``write_tags`` adds the codes of write scripts (the catalogue's
    ``DML`` category, odt/dml.py): off for read questions, so the embedded default's vocabulary is the
    one it had before write tasks existed."""
    fmt = CompactFormat()
    codes = [spec.name for spec in CATALOGUE if write_tags or spec.category != "DML"] + ["VALUES", "PARSE_ERROR"]
    texts = [fmt.prompt("db", "question") + fmt.answer("SELECT 1")]
    texts += [f"\nF: {code}\nA:" for code in codes]
    texts.append("\nF: " + " ".join(codes) + "\nA:")
    return texts


def training_texts(examples: Iterable[Example], format: CompactFormat) -> list[str]:
    """The corpus for :func:`train_tokenizer`: each example's prompt followed by its gold answer."""
    return [format.prompt(e.db_id, e.question) + format.answer(e.gold_sql) for e in examples]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2048, *, write_tags: bool = False) -> Any:
    """Train a byte-level BPE on ``texts`` (plus :func:`framing_texts`, with the write scripts' tag
    codes when ``write_tags``) and wrap it as a ``transformers.PreTrainedTokenizerFast``. The
    vocabulary may come out smaller than ``vocab_size`` on a small corpus."""
    import transformers
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRE_TOKEN_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [*texts, *framing_texts(write_tags=write_tags)]
    bpe.train_from_iterator(corpus, trainer=trainer)
    bpe.add_tokens(list(FORMAT_TOKENS))
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
        unk_token="<unk>",
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )


__all__ = ["FORMAT_TOKENS", "PRE_TOKEN_PATTERN", "SPECIAL_TOKENS", "framing_texts", "train_tokenizer", "training_texts"]
