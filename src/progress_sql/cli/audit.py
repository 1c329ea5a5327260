"""``progress-sql audit``: run the gold-query checks over a dataset and write records and a report.

The run folder holds ``summary.json``, ``samples.jsonl`` (one record per example), ``report.md``,
``counts.png`` and ``records.jsonl`` (the same records under the audit's earlier name).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from progress_sql.cli import _common as common


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
    from progress_sql.audit.run import AuditRequest, run_audit

    common.check_timeout(timeout)
    chosen = None if checks is None else tuple(c for c in checks.split(",") if c.strip())
    request = AuditRequest(
        task, out, data_dir, chosen, db, workers, common.resolve_shard_workers(workers, ray), timeout,
        progress=not as_json, ray=ray, ray_databases=ray_databases,
    )  # fmt: skip
    run = run_audit(request)
    if run.plot_problem is not None:
        common.warn(f"no plot: {run.plot_problem}")  # on stderr: --json output stays JSON
    if as_json:
        typer.echo(json.dumps(run.summary.to_dict(), indent=2))
        return
    table = common.table(
        f"gold audit of {task}: {run.examples} examples in {run.seconds:.1f} s", ["id", "check", "family"], ["fired"]
    )
    for check_id, entry in run.summary.results["checks"].items():
        table.add_row(check_id, entry["name"], entry["family"], str(entry["fired"]))
    common.stdout.print(table)
    common.stdout.print(f"report: {out / 'report.md'}")


def register(app: typer.Typer) -> None:
    common.add_command(app, "audit", audit_command)
