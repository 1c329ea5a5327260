"""Evaluation over the three task kinds: a write task judged by its checks, and the summary and the
report broken down by kind."""

from __future__ import annotations

from dataclasses import replace

from progress_sql.data.embedded import ambiguous_questions, real_questions, write_tasks
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.evaluation.metrics import summarize_eval
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore


def test_write_and_ambiguous_examples_are_scored_and_broken_down_by_kind() -> None:
    write, wrong_write = write_tasks()[0], write_tasks()[1]
    ambiguous, read = ambiguous_questions()[0], real_questions()[0]
    # The harness keys records by example index: give the four sets' examples distinct ones.
    examples = [replace(e, index=i) for i, e in enumerate([write, wrong_write, ambiguous, read])]
    samples = [
        [Sample(write.gold_sql)],
        [Sample("DELETE FROM concert WHERE Year = '2015'")],  # forgets the assignments: fails a check
        [Sample(ambiguous.gold_sql)],
        [Sample("SELECT count(*) FROM stadium")],
    ]
    with GoldStore(get_preset("spider")) as store:
        records = evaluate(examples, samples, store)
    assert [(r.kind, r.match) for r in records] == [
        ("write", True), ("write", False), ("ambiguous", True), ("read", False),
    ]  # fmt: skip
    assert records[1].reason == "1 of 2 checks passed; failed: assignments left"
    assert "DML_STATEMENT_COUNT_MISMATCH" in records[1].tags
    by_kind = summarize_eval(records)["by_kind"]
    assert list(by_kind) == ["read", "write", "ambiguous"]
    assert (by_kind["write"]["scored"], by_kind["write"]["matched"]) == (2, 1)
