"""Greedy generation with the compact format and execution accuracy (EX) under the ``strict`` preset.

Model SQL runs in the isolated execution pool of a :class:`~progress_sql.judge.gold.GoldStore`,
which also keeps the gold results.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from progress_sql.evaluation.stats import Accuracy
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.prompts import CompactFormat
from progress_sql.sql.extract import extract
from progress_sql.types import Example

#: Every query of an EX measurement, gold and model (a training-time budget, not the eval command's).
EX_LIMITS = ExecLimits(timeout_s=2.0)


def ex_store(preset: str = "strict", *, pool: ExecutionPool | None = None) -> GoldStore:
    """The gold store EX is measured with: ``preset`` and :data:`EX_LIMITS` (a one-worker pool of its
    own without ``pool``)."""
    return GoldStore(get_preset(preset), pool=pool, limits=EX_LIMITS)


def greedy_sql(
    model: Any,
    tokenizer: Any,
    format: CompactFormat,
    examples: Sequence[Example],
    max_new_tokens: int = 64,
    batch_size: int = 32,
) -> list[str]:
    """The model's greedy answer text for each example's first-turn prompt (batched, left-padded),
    cut at the first eos; special tokens other than the format tags are dropped."""
    import torch

    eos, pad = int(tokenizer.eos_token_id), int(tokenizer.pad_token_id)
    was_training = model.training
    model.eval()
    texts: list[str] = []
    try:
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            prompts = [format.prompt(example.db_id, example.question) for example in chunk]
            batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
            with torch.inference_mode():
                output = model.generate(
                    input_ids=batch["input_ids"].to(model.device),  # the tokenizer's tensors are on the CPU
                    attention_mask=batch["attention_mask"].to(model.device),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=pad,
                    eos_token_id=eos,
                )
            width = batch["input_ids"].shape[1]
            for row in output[:, width:].tolist():
                cut = row.index(eos) if eos in row else len(row)
                texts.append(tokenizer.decode(row[:cut], skip_special_tokens=True, clean_up_tokenization_spaces=False))
    finally:
        model.train(was_training)
    return texts


def execution_accuracy(
    examples: Sequence[Example], texts: Sequence[str], preset: str = "strict", *, store: GoldStore | None = None
) -> Accuracy:
    """EX of ``texts`` (model answers, SQL extracted with :func:`progress_sql.sql.extract.extract`)
    against each example's gold, run in the isolated pool and judged by ``preset`` (with ``store``,
    by the store's preset and limits; without, by a store of its own, closed on return). A text with
    no SQL, an example whose gold fails and one whose database is absent count as wrong."""
    if len(examples) != len(texts):
        raise ValueError(f"{len(examples)} examples but {len(texts)} texts")
    own = store is None
    store = store if store is not None else ex_store(preset)
    try:
        answers = {
            position: sql
            for position, (example, text) in enumerate(zip(examples, texts, strict=True))
            if (sql := extract(text).sql) is not None and Path(example.db_path).is_file()
        }
        judged = store.judge_many([examples[position] for position in answers], list(answers.values()))
        matched = {position: bool(j and j.match) for position, j in zip(answers, judged, strict=True)}
    finally:
        if own:
            store.close()
    matches = tuple(matched.get(position, False) for position in range(len(examples)))
    return Accuracy.of(matches)


__all__ = ["EX_LIMITS", "Accuracy", "ex_store", "execution_accuracy", "greedy_sql"]
