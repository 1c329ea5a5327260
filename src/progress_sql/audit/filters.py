"""Named data filters built on the audit checks, shared by ``export`` and ``train``; the sets and what
they drop: docs/audit.md#filter-sets.

>>> sorted(FILTER_SETS)
['none', 'rl-default', 'strict']
>>> FILTER_SETS["rl-default"].checks
('G01', 'G02', 'G03', 'G04', 'G12')
>>> apply_filter([], "none").kept
()
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from progress_sql.audit.catalogue import resolve_checks
from progress_sql.audit.runner import DEFAULT_TIMEOUT_S, audit_examples
from progress_sql.cluster.shards import ShardRunner
from progress_sql.execution.executor import ExecLimits
from progress_sql.judge.write import reference_verdict
from progress_sql.registry import lookup
from progress_sql.runfolder import write_jsonl
from progress_sql.types import Example

#: Longest evidence kept with a reason in dropped.jsonl.
REASON_EVIDENCE_CHARS = 160


@dataclass(frozen=True, slots=True)
class FilterSet:
    """A named set of checks; an example is dropped when any of them fires."""

    name: str
    description: str
    checks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DroppedExample:
    """An example a filter removed, with the checks that fired (``"G03 empty: gold returns 0 rows"``)."""

    index: int
    db_id: str
    question: str
    gold_sql: str
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FilterOutcome:
    kept: tuple[Example, ...]
    dropped: tuple[DroppedExample, ...]


_RL_DEFAULT = ("G01", "G02", "G03", "G04", "G12")

FILTER_SETS: dict[str, FilterSet] = {
    s.name: s
    for s in (
        FilterSet("none", "keep every example (nothing runs)", ()),
        FilterSet(
            "rl-default",
            "drop golds that fail, time out, return nothing or only NULLs, or depend on row order",
            _RL_DEFAULT,
        ),
        FilterSet(
            "strict",
            "rl-default, and golds with ties at a LIMIT boundary or non-deterministic functions",
            (*_RL_DEFAULT[:4], "G07", "G11", "G12"),
        ),
    )
}


def apply_filter(
    examples: Sequence[Example],
    name: str,
    *,
    workers: int = 1,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: bool = False,
    cluster: ShardRunner | None = None,
) -> FilterOutcome:
    """Audit ``examples`` with the checks of filter set ``name`` and split them into kept and dropped.

    Unknown names raise ConfigError. Execution checks skip examples whose database is absent, so
    those examples are kept unless a static check of the set fires. The checks audit read golds; a
    write task (docs/tasks.md) is kept when its reference script runs on a copy of its database and
    passes its own checks (:func:`write_reference_problem`), whatever the set. With ``cluster`` the
    audit runs on its nodes (:func:`~progress_sql.audit.runner.audit_examples`); the outcome is the same.
    """
    filter_set = lookup(FILTER_SETS, name, "filter set")
    if not filter_set.checks or not examples:
        return FilterOutcome(tuple(examples), ())
    names = {c.id: c.name for c in resolve_checks(filter_set.checks)}
    reads = [e for e in examples if e.write is None]
    audited = iter(
        audit_examples(
            reads, filter_set.checks, workers=workers, timeout_s=timeout_s, progress=progress, cluster=cluster
        )
    )
    kept: list[Example] = []
    dropped: list[DroppedExample] = []
    for example in examples:
        if example.write is None:
            record = next(audited)
            reasons = tuple(
                f"{f.check} {names[f.check]}: {f.evidence[:REASON_EVIDENCE_CHARS]}" for f in record.findings
            )
        else:
            problem = write_reference_problem(example, timeout_s)
            reasons = () if problem is None else (f"{WRITE_REFERENCE_REASON}: {problem[:REASON_EVIDENCE_CHARS]}",)
        if not reasons:
            kept.append(example)
            continue
        dropped.append(DroppedExample(example.index, example.db_id, example.question, example.gold_sql, reasons))
    return FilterOutcome(tuple(kept), tuple(dropped))


#: The reason a filter gives for a write task whose reference script does not pass its own checks.
WRITE_REFERENCE_REASON = "write-reference"


def write_reference_problem(example: Example, timeout_s: float = DEFAULT_TIMEOUT_S) -> str | None:
    """Why a write task's reference script cannot serve as its gold (None when it runs on a copy of
    the database and passes every check; an absent database says nothing, like the execution checks)."""
    if example.write is None or not Path(example.db_path).is_file():
        return None
    verdict = reference_verdict(example, ExecLimits(timeout_s=timeout_s)).verdict
    return None if verdict.match else verdict.reason


def write_dropped(outcome: FilterOutcome, path: Path) -> None:
    """Write the dropped examples as JSON lines (``index, db_id, question, gold_sql, reasons``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, outcome.dropped)
