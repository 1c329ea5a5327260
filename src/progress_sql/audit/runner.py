"""Audit a dataset: every selected check on every example, one worker process per database (read-only,
perturbed copies only when a check asks, removed before it returns); docs/audit.md#design."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from progress_sql.audit.catalogue import resolve_checks
from progress_sql.audit.check import AuditFinding, Check, shorten
from progress_sql.audit.context import AuditContext, read_audit_profile
from progress_sql.audit.copies import PerturbedCopies
from progress_sql.cluster.shards import ShardRunner, example_db_path, relocate_example
from progress_sql.execution.executor import ExecLimits, Executor
from progress_sql.execution.lifetime import BoundProcessPool
from progress_sql.types import Example

#: The gold's deadline: Arctic-Text2SQL-R1 drops golds slower than 5 s.
DEFAULT_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """The audit of one example: every check that fired, with its evidence."""

    index: int
    db_id: str
    question: str
    gold_sql: str
    db_available: bool
    gold_status: str
    gold_rows: int | None
    findings: tuple[AuditFinding, ...] = ()
    #: Checks that crashed on this example (a bug, reported rather than hidden).
    errors: tuple[str, ...] = field(default=())

    @property
    def fired(self) -> tuple[str, ...]:
        return tuple(f.check for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "db_id": self.db_id,
            "question": self.question,
            "gold_sql": self.gold_sql,
            "db_available": self.db_available,
            "gold_status": self.gold_status,
            "gold_rows": self.gold_rows,
            "fired": list(self.fired),
            "findings": [{"check": f.check, "evidence": f.evidence} for f in self.findings],
            "errors": list(self.errors),
        }


def audit_one(ctx: AuditContext, checks: Sequence[Check]) -> AuditRecord:
    """Run ``checks`` on one example (execution checks only when its database is there)."""
    findings: list[AuditFinding] = []
    errors: list[str] = []
    for item in checks:
        if item.needs_database and not ctx.db_available:
            continue
        try:
            evidence = item.function(ctx)
        except Exception as error:  # a check's bug must not stop the audit; it is reported
            errors.append(shorten(f"{item.id}: {type(error).__name__}: {error}", 200))
            continue
        if evidence is not None:
            findings.append(AuditFinding(item.id, evidence))
    gold = ctx.gold if ctx.db_available and any(c.needs_database for c in checks) else None
    status = "missing-db" if not ctx.db_available else (gold.status if gold is not None else "not-run")
    example = ctx.example
    return AuditRecord(
        example.index, example.db_id, example.question, example.gold_sql, ctx.db_available, status,
        len(gold.rows) if gold is not None and gold.ok else None, tuple(findings), tuple(errors),
    )  # fmt: skip


def audit_database(
    examples: Sequence[Example], check_ids: Sequence[str], limits: ExecLimits, scratch_dir: str | None = None
) -> list[AuditRecord]:
    """Audit examples that share one database file (a worker's unit of work)."""
    checks = resolve_checks(check_ids)
    db_path = examples[0].db_path
    available = Path(db_path).is_file()
    executor = Executor(max_connections=2)
    wants_copies = available and any(c.family == "perturbation" for c in checks)
    try:
        profile = read_audit_profile(db_path) if available else None
        with PerturbedCopies(db_path, scratch_dir) as copies:
            return [
                audit_one(AuditContext(e, executor, limits, profile, copies if wants_copies else None), checks)
                for e in examples
            ]
    finally:
        executor.close()


def group_by_database(examples: Sequence[Example]) -> list[list[int]]:
    """Positions of the examples grouped by database file, largest group first (balances the workers)."""
    groups: dict[str, list[int]] = {}
    for position, example in enumerate(examples):
        groups.setdefault(example.db_path, []).append(position)
    return sorted(groups.values(), key=len, reverse=True)


def audit_examples(
    examples: Sequence[Example],
    checks: Sequence[str] | None = None,
    *,
    workers: int = 1,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: bool = False,
    scratch_dir: str | Path | None = None,
    cluster: ShardRunner | None = None,
) -> list[AuditRecord]:
    """Audit every example with the named checks (all for None); one record per example, in order.

    ``scratch_dir`` is where the temporary copies go (the system's temporary folder by default).
    With ``cluster`` the examples are sharded by database over its nodes, each shard audited there as
    here with ``workers`` processes (docs/scaling.md); the records are the same.
    """
    ids = [c.id for c in resolve_checks(checks)]
    if cluster is not None:
        with _bar(progress, len(examples)) as advance:
            shard = partial(_audit_shard, tuple(ids), workers, timeout_s)
            run = cluster.map(shard, examples, db_path=example_db_path, relocate=relocate_example, progress=advance)
        return list(run.results)
    limits = ExecLimits(timeout_s=timeout_s)
    groups = group_by_database(examples)
    scratch = None if scratch_dir is None else str(scratch_dir)
    records: list[AuditRecord | None] = [None] * len(examples)

    def store(group: list[int], audited: list[AuditRecord]) -> None:
        for position, record in zip(group, audited, strict=True):
            records[position] = record

    with _bar(progress, len(examples)) as advance:
        if workers <= 1 or len(groups) <= 1:
            for group in groups:
                store(group, audit_database([examples[i] for i in group], ids, limits, scratch))
                advance(len(group))
        else:
            context = multiprocessing.get_context("spawn")
            # Processes that end with this one, and at once on an interrupt (execution/lifetime.py).
            with BoundProcessPool(min(workers, len(groups)), context) as pool:
                futures = {
                    pool.submit(audit_database, [examples[i] for i in group], ids, limits, scratch): group
                    for group in groups
                }
                for future in as_completed(futures):
                    store(futures[future], future.result())
                    advance(len(futures[future]))
    return [r for r in records if r is not None]


def _audit_shard(checks: Sequence[str], workers: int, timeout_s: float, examples: list[Example]) -> list[AuditRecord]:
    """One cluster shard: the same audit as on one machine, on the node that runs it."""
    return audit_examples(examples, checks, workers=workers, timeout_s=timeout_s)


@contextmanager
def _bar(show: bool, total: int) -> Iterator[Callable[[int], None]]:
    if not show:
        yield lambda _n: None
        return
    from progress_sql.progress import progress_bar

    with progress_bar("auditing golds") as bar:
        job = bar.add_task("audit", total=total)
        yield lambda n: bar.advance(job, n)
