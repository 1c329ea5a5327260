"""The data filters over write tasks: the read-gold checks do not apply to a DML reference; it runs
on a copy of its database and must pass its own checks."""

from __future__ import annotations

from dataclasses import replace

from progress_sql.audit.filters import apply_filter
from progress_sql.data.embedded import write_tasks
from progress_sql.types import WriteCheck


def test_a_write_task_is_kept_when_its_reference_passes_its_checks_and_dropped_otherwise() -> None:
    task = write_tasks()[0]
    assert task.write is not None
    wrong = WriteCheck("a wrong expectation", "SELECT count(*) FROM singer", ((99,),))
    broken = replace(task, index=99, write=replace(task.write, checks=(*task.write.checks, wrong)))
    outcome = apply_filter([task, broken], "rl-default")
    assert outcome.kept == (task,)
    (dropped,) = outcome.dropped
    assert dropped.index == 99
    assert dropped.reasons[0].startswith("write-reference: ")
    assert "a wrong expectation" in dropped.reasons[0]
    assert apply_filter([broken], "none").kept == (broken,)  # nothing runs under none
