"""Greedy generation and execution accuracy."""

from __future__ import annotations

import math
from typing import Any

import pytest

from progress_sql.prompts import CompactFormat
from progress_sql.training.evaluate import execution_accuracy, greedy_sql
from progress_sql.training.templates import TemplateDataset


def test_gold_texts_score_one(dataset: TemplateDataset) -> None:
    fmt = CompactFormat()
    examples = dataset.heldout_new_combo[:20] + dataset.real_test[:10]
    report = execution_accuracy(examples, [fmt.answer(e.gold_sql) for e in examples])
    assert (report.n, report.correct, report.ex, report.standard_error) == (30, 30, 1.0, 0.0)
    assert all(report.matches)


def test_wrong_and_empty_texts(dataset: TemplateDataset) -> None:
    fmt = CompactFormat()
    examples = dataset.heldout_new_value[:4]
    texts = [fmt.answer(examples[0].gold_sql), "", fmt.answer("SELECT nonsense FROM nowhere"), "no sql at all"]
    report = execution_accuracy(examples, texts)
    assert report.matches == (True, False, False, False)
    assert report.ex == 0.25
    assert report.standard_error == pytest.approx(math.sqrt(0.25 * 0.75 / 4))
    with pytest.raises(ValueError, match="texts"):
        execution_accuracy(examples, texts[:2])
    assert execution_accuracy([], []).n == 0


def test_greedy_generation_shapes(dataset: TemplateDataset, tokenizer: Any, torch_one_thread: Any) -> None:
    from progress_sql.training.model import build_model

    model = build_model(tokenizer, "tiny", seed=0)
    examples = dataset.heldout_new_combo[:5]
    texts = greedy_sql(model, tokenizer, CompactFormat(), examples, max_new_tokens=6, batch_size=2)
    assert len(texts) == 5
    assert all(isinstance(t, str) for t in texts)
    assert all("<pad>" not in t and "<eos>" not in t for t in texts)
    assert greedy_sql(model, tokenizer, CompactFormat(), examples, max_new_tokens=6, batch_size=5) == texts
    assert execution_accuracy(examples, texts).n == 5
