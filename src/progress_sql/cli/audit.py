"""``progress-sql audit``: run the gold-query checks over a dataset and write records and a report."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.table import Table

from progress_sql.cli._common import fail, stdout, versions, write_json
from progress_sql.errors import ConfigError, DatasetError


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_command(
        task: str = typer.Option(..., "--task", help="Task name (spider-dev, bird-dev, ...) or a questions file."),
        data_dir: Path | None = typer.Option(None, "--data-dir", help="Folder holding the task's files."),
        out: Path = typer.Option(Path("runs/audit"), "--out", help="Output folder."),
        checks: str | None = typer.Option(None, "--checks", help="Comma-separated check ids or names (default: all)."),
        workers: int = typer.Option(2, "--workers", help="Processes, one database at a time each."),
        timeout: float = typer.Option(5.0, "--timeout", help="Seconds a gold may run (G02 fires beyond)."),
        db: str | None = typer.Option(None, "--db", help="Audit only the examples of this database id."),
    ) -> None:
        """Audit gold queries with mechanical checks (read-only; perturbed copies are temporary)."""
        from progress_sql.audit.catalogue import resolve_checks
        from progress_sql.audit.report import markdown_report, summarize, write_records
        from progress_sql.audit.runner import audit_examples
        from progress_sql.data.tasks import load_task

        if workers < 1 or timeout <= 0:
            fail("--workers must be >= 1 and --timeout > 0")
        try:
            selected = resolve_checks(None if checks is None else [c for c in checks.split(",") if c.strip()])
            examples = load_task(task, data_dir)
        except (ConfigError, DatasetError) as error:
            fail(str(error))
        if db is not None:
            examples = [e for e in examples if e.db_id == db]
            if not examples:
                fail(f"no example of {task} uses database {db!r}")
        started = time.perf_counter()
        records = audit_examples(examples, [c.id for c in selected], workers=workers, timeout_s=timeout, progress=True)
        seconds = time.perf_counter() - started
        out.mkdir(parents=True, exist_ok=True)
        write_records(records, out / "records.jsonl")
        summary = summarize(records, selected)
        summary |= {"task": task, "seconds": round(seconds, 1), "workers": workers, "timeout_s": timeout}
        write_json(out / "summary.json", summary | {"versions": versions()})
        (out / "report.md").write_text(markdown_report(records, selected, summary, task), encoding="utf-8")
        _plot(summary, out / "counts.png", task)
        table = Table(title=f"gold audit of {task}: {len(records)} examples in {seconds:.1f} s", header_style="bold")
        for column in ("id", "check", "family", "fired"):
            table.add_column(column, justify="right" if column == "fired" else "left")
        for check_id, entry in summary["checks"].items():
            table.add_row(check_id, entry["name"], entry["family"], str(entry["fired"]))
        stdout.print(table)
        stdout.print(f"report: {out / 'report.md'}")


def _plot(summary: dict, path: Path, task: str) -> None:  # type: ignore[type-arg]
    from progress_sql.plots import PlottingUnavailableError, audit_counts_plot

    counts = [(f"{i} {e['name']}", int(e["fired"])) for i, e in summary["checks"].items()]
    try:
        audit_counts_plot(counts, path, f"gold audit: {Path(task).name} ({summary['examples']} examples)")
    except PlottingUnavailableError as error:
        stdout.print(f"[yellow]no plot:[/] {error}")
