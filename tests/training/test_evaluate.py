"""Greedy generation and execution accuracy."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest

from progress_sql.data.embedded import real_questions
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.prompts import CompactFormat
from progress_sql.training.evaluate import EX_LIMITS, Accuracy, ex_store, execution_accuracy, greedy_sql
from progress_sql.training.templates import TemplateDataset
from progress_sql.types import ExecResult


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


def test_a_report_on_real_questions_reads_as_counts_rate_and_standard_error() -> None:
    examples = real_questions()[:2]
    texts = [f"<think></think><sql>{e.gold_sql}</sql>" for e in examples[:1]] + ["no sql"]
    report = execution_accuracy(examples, texts)
    assert repr(report) == "Accuracy(n=2, correct=1)"
    assert report.matches == (True, False)
    assert (report.ex, round(report.standard_error, 4)) == (0.5, 0.3536)
    assert report.as_dict() == {"n": 2, "correct": 1, "ex": 0.5, "se": 0.353553}


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


def test_greedy_generation_sends_its_inputs_to_the_models_device(
    dataset: TemplateDataset, tokenizer: Any, torch_one_thread: Any
) -> None:
    """A model on an accelerator gets its inputs there (the tokenizer's tensors are on the CPU). The
    stand-in lives on PyTorch's ``meta`` device and answers as ``generate`` does: the prompt, then the
    new tokens (here: eos at once)."""
    torch = torch_one_thread
    seen: list[tuple[str, str]] = []

    class OnAnotherDevice:
        device = torch.device("meta")
        training = False

        def eval(self) -> None: ...

        def train(self, mode: bool = True) -> None: ...

        def generate(self, input_ids: Any, attention_mask: Any, eos_token_id: int, **_: Any) -> Any:
            seen.append((input_ids.device.type, attention_mask.device.type))
            width = input_ids.shape[1]
            return torch.full((input_ids.shape[0], width + 1), eos_token_id, dtype=torch.long)

    texts = greedy_sql(OnAnotherDevice(), tokenizer, CompactFormat(), dataset.heldout_new_combo[:3], batch_size=2)
    assert seen == [("meta", "meta")] * 2
    assert texts == ["", "", ""]


def test_model_sql_runs_in_the_stores_pool(
    dataset: TemplateDataset, pool: ExecutionPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    fmt = CompactFormat()
    examples = dataset.heldout_new_value[:3]
    texts = [fmt.answer(examples[0].gold_sql), fmt.answer("SELECT 1"), "no sql"]
    jobs: list[ExecJob] = []
    run_many = pool.run_many

    def counting(batch: Sequence[ExecJob], **callbacks: Any) -> list[ExecResult]:
        jobs.extend(batch)
        return run_many(batch, **callbacks)

    monkeypatch.setattr(pool, "run_many", counting)
    store = ex_store(pool=pool)
    report = execution_accuracy(examples, texts, store=store)
    assert report == Accuracy(3, 1)
    assert report.matches == (True, False, False)
    assert "SELECT 1" in [job.sql for job in jobs]  # the model's SQL went to the isolated workers
    assert all(job.limits == EX_LIMITS for job in jobs)
    assert execution_accuracy(examples, texts, store=store) == report  # a given store stays open
    assert report.as_dict() == {"n": 3, "correct": 1, "ex": 0.333333, "se": 0.272166}
