"""A small byte-level BPE tokenizer with ChatML special tokens and Qwen2.5's chat layout, trained here
on the music questions (no hub): what the side environments' tests (verl, Atropos) load by path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import REPO_ROOT

#: Qwen2.5's ChatML layout (without its tool branches): every turn ends with "<|im_end|>\n".
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
QUESTIONS = json.loads((REPO_ROOT / "tests" / "fixtures" / "music_questions.json").read_text(encoding="utf-8"))


def save_chatml_tokenizer(folder: Path) -> Any:
    """Train the tokenizer (eos = ``<|im_end|>``), save it into ``folder`` and return it."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    corpus = [f"{q['question']} {q['query']}" for q in QUESTIONS] + [
        "system user assistant Feedback: <think> </think> <sql> </sql> Database Schema: CREATE TABLE"
    ]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus * 10,
        trainers.BpeTrainer(
            vocab_size=600,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<|endoftext|>", eos_token="<|im_end|>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(folder)
    return tokenizer
