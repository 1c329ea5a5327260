"""``progress-sql audit``: run the gold-query checks over a dataset and write records and a report.

The run folder holds ``summary.json``, ``samples.jsonl`` (one record per example), ``report.md``,
``counts.png`` and ``records.jsonl`` (the same records under the audit's earlier name).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer

from progress_sql.cli import _common as common
from progress_sql.cluster.connect import joined_cluster
from progress_sql.runfolder import RunSummary

#: The audit's records under the name it wrote before the common run folder (users read it).
LEGACY_RECORDS = "records.jsonl"


def audit_command(
    task: str = common.task_option(),
    data_dir: Path | None = common.data_dir_option(),
    out: Path = common.out_dir_option(Path("runs/audit"), also="counts.png, records.jsonl"),
    checks: str | None = typer.Option(None, "--checks", help="Comma-separated check ids or names (default: all)."),
    workers: int = common.workers_option(),
    timeout: float = common.timeout_option("audit"),
    db: str | None = typer.Option(None, "--db", help="Audit only the examples of this database id."),
    as_json: bool = common.json_option(),
    ray: str | None = common.ray_option(),
    ray_databases: str = common.ray_databases_option(),
) -> None:
    """Audit gold queries with mechanical checks (read-only; perturbed copies are temporary)."""
    from progress_sql.audit.catalogue import resolve_checks
    from progress_sql.audit.report import markdown_report, summarize, write_records
    from progress_sql.audit.runner import audit_examples
    from progress_sql.data.tasks import load_task

    common.check_timeout(timeout)
    processes = common.resolve_shard_workers(workers, ray)
    selected = resolve_checks(None if checks is None else [c for c in checks.split(",") if c.strip()])
    examples = load_task(task, data_dir)
    if db is not None:
        examples = [e for e in examples if e.db_id == db]
        if not examples:
            common.fail(f"no example of {task} uses database {db!r}")
    common.prepare_out(out)
    started = time.perf_counter()
    with joined_cluster(ray, ray_databases, workers) as cluster:
        records = audit_examples(
            examples, [c.id for c in selected], workers=processes, timeout_s=timeout, progress=not as_json,
            cluster=cluster,
        )  # fmt: skip
    seconds = time.perf_counter() - started
    settings = {
        "task": task,
        "data_dir": str(data_dir) if data_dir else None,
        "checks": [c.id for c in selected],
        "db": db,
        "workers": workers or None,
        "timeout_s": timeout,
        **({"ray": ray, "ray_databases": ray_databases} if ray is not None else {}),
    }
    results = summarize(records, selected)
    results |= {"task": task, "seconds": round(seconds, 1), "workers": processes, "timeout_s": timeout}
    summary = RunSummary("audit", settings, results)
    common.write_run(out, summary, [r.as_dict() for r in records], markdown_report(records, selected, results, task))
    write_records(records, out / LEGACY_RECORDS)
    _plot(results, out / "counts.png", task)
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
        return
    table = common.table(
        f"gold audit of {task}: {len(records)} examples in {seconds:.1f} s", ["id", "check", "family"], ["fired"]
    )
    for check_id, entry in results["checks"].items():
        table.add_row(check_id, entry["name"], entry["family"], str(entry["fired"]))
    common.stdout.print(table)
    common.stdout.print(f"report: {out / 'report.md'}")


def _plot(summary: dict[str, Any], path: Path, task: str) -> None:
    from progress_sql.plots import PlottingUnavailableError, audit_counts_plot

    counts = [(f"{i} {e['name']}", int(e["fired"])) for i, e in summary["checks"].items()]
    try:
        audit_counts_plot(counts, path, f"gold audit: {Path(task).name} ({summary['examples']} examples)")
    except PlottingUnavailableError as error:
        common.stdout.print(f"[yellow]no plot:[/] {error}")


def register(app: typer.Typer) -> None:
    common.add_command(app, "audit", audit_command)
