"""Greedy generation with the compact format and execution accuracy (EX) under the ``strict`` preset.

>>> from progress_sql.data.embedded import real_questions
>>> examples = real_questions()[:2]
>>> texts = [f"<think></think><sql>{e.gold_sql}</sql>" for e in examples[:1]] + ["no sql"]
>>> execution_accuracy(examples, texts)
EXReport(n=2, correct=1, ex=0.5, standard_error=0.3535533905932738, matches=(True, False))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from progress_sql.execution.compare import get_preset, judge
from progress_sql.execution.executor import ExecLimits, Executor
from progress_sql.prompts import CompactFormat
from progress_sql.sql.extract import extract
from progress_sql.types import Example, ExecResult

_LIMITS = ExecLimits(timeout_s=2.0)


@dataclass(frozen=True, slots=True)
class EXReport:
    """Execution accuracy over ``n`` examples; ``standard_error`` = sqrt(ex (1 - ex) / n)."""

    n: int
    correct: int
    ex: float
    standard_error: float
    matches: tuple[bool, ...] = ()


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
                    input_ids=batch["input_ids"],
                    attention_mask=batch["attention_mask"],
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


def execution_accuracy(examples: Sequence[Example], texts: Sequence[str], preset: str = "strict") -> EXReport:
    """EX of ``texts`` (model answers, SQL extracted with :func:`progress_sql.sql.extract.extract`)
    against each example's gold, run through the safe executor and judged by ``preset``. A text
    with no SQL, and an example whose gold fails, count as wrong."""
    if len(examples) != len(texts):
        raise ValueError(f"{len(examples)} examples but {len(texts)} texts")
    comparison = get_preset(preset)
    executor = Executor(max_connections=8)
    gold_cache: dict[tuple[str, str], list[ExecResult]] = {}
    matches: list[bool] = []
    try:
        for example, text in zip(examples, texts, strict=True):
            key = (example.db_path, example.gold_sql)
            if key not in gold_cache:
                gold_cache[key] = [
                    executor.run(example.db_path, query, _LIMITS) for query in comparison.gold_queries(example.gold_sql)
                ]
            sql = extract(text).sql
            if sql is None:
                matches.append(False)
                continue
            pred = executor.run(example.db_path, comparison.prepare_pred(sql), _LIMITS)
            matches.append(judge(comparison, example.gold_sql, gold_cache[key], pred).match)
    finally:
        executor.close()
    n, correct = len(matches), sum(matches)
    ex = correct / n if n else 0.0
    return EXReport(n, correct, ex, math.sqrt(ex * (1 - ex) / n) if n else 0.0, tuple(matches))


__all__ = ["EXReport", "execution_accuracy", "greedy_sql"]
