"""``audit`` as a library call: :class:`AuditRequest` (what the command's options say) -> :func:`run_audit`
(the checks over a task's examples, here or on a Ray cluster, and the run folder: ``summary.json``,
``samples.jsonl``, ``report.md``, ``counts.png`` and ``records.jsonl``, the records under the audit's
earlier name, which users read)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.audit.catalogue import resolve_checks
from progress_sql.audit.report import markdown_report, summarize, write_records
from progress_sql.audit.runner import audit_examples
from progress_sql.cluster.connect import joined_cluster
from progress_sql.data.tasks import load_task
from progress_sql.errors import ConfigError
from progress_sql.runfolder import RunFolder, RunSummary, prepared_folder, writing_results

#: The audit's records under the name it wrote before the common run folder (users read it).
LEGACY_RECORDS = "records.jsonl"


@dataclass(frozen=True, slots=True)
class AuditRequest:
    """One ``audit`` run as its options give it."""

    task: str
    out: Path
    data_dir: Path | None = None
    checks: tuple[str, ...] | None = None  # check ids or names; None: all
    db: str | None = None  # only this database's examples
    workers: int = 0  # as given, recorded
    processes: int = 1  # resolved: here, or per shard on a cluster
    timeout_s: float = 5.0
    progress: bool = True
    ray: str | None = None
    ray_databases: str = "shared"


@dataclass(frozen=True, slots=True)
class AuditRun:
    """A finished audit: its ``summary.json``, how many examples it read, and why the plot is missing
    (None: drawn)."""

    summary: RunSummary
    examples: int
    seconds: float
    plot_problem: str | None


def run_audit(request: AuditRequest) -> AuditRun:
    """Audit the task's gold queries and write the run folder; a bad request raises ConfigError first."""
    selected = resolve_checks(None if request.checks is None else list(request.checks))
    examples = load_task(request.task, request.data_dir)
    if request.db is not None:
        examples = [e for e in examples if e.db_id == request.db]
        if not examples:
            raise ConfigError(f"no example of {request.task} uses database {request.db!r}")
    out = request.out
    prepared_folder(out)  # before the work starts: a bad path fails at once
    started = time.perf_counter()
    with joined_cluster(request.ray, request.ray_databases, request.workers) as cluster:
        records = audit_examples(
            examples, [c.id for c in selected], workers=request.processes, timeout_s=request.timeout_s,
            progress=request.progress, cluster=cluster,
        )  # fmt: skip
    seconds = time.perf_counter() - started
    ray = {"ray": request.ray, "ray_databases": request.ray_databases} if request.ray is not None else {}
    settings = {
        "task": request.task,
        "data_dir": str(request.data_dir) if request.data_dir else None,
        "checks": [c.id for c in selected],
        "db": request.db,
        "workers": request.workers or None,
        "timeout_s": request.timeout_s,
        **ray,
    }
    results = summarize(records, selected)
    results |= {"task": request.task, "seconds": round(seconds, 1), "workers": request.processes,
                "timeout_s": request.timeout_s}  # fmt: skip
    summary = RunSummary("audit", settings, results)
    with writing_results(out):
        RunFolder(out).create()
        write_records(records, out / LEGACY_RECORDS)  # before the summary, which comes last
        RunFolder(out).write(
            summary, [r.as_dict() for r in records], markdown_report(records, selected, results, request.task)
        )
    return AuditRun(summary, len(records), seconds, _plot(results, out / "counts.png", request.task))


def _plot(summary: dict[str, Any], path: Path, task: str) -> str | None:
    """``counts.png``: how often each check fired; the reason when it cannot be drawn."""
    from progress_sql.plots import PlottingUnavailableError, audit_counts_plot

    counts = [(f"{i} {e['name']}", int(e["fired"])) for i, e in summary["checks"].items()]
    try:
        audit_counts_plot(counts, path, f"gold audit: {Path(task).name} ({summary['examples']} examples)")
    except PlottingUnavailableError as error:
        return str(error)
    return None
