"""``progress-sql build-suite``: distil test suites (fuzzed databases) for a task's databases.

Writes ``OUT/<db_id>/fuzz_<k>.sqlite`` (the chosen pool databases; the original database is always
the suite's first member and is not copied) and ``OUT/manifest.json`` (settings, per-gold suite
files and neighbour coverage). ``progress-sql eval --suite OUT`` then reports TS beside EX.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import typer

from progress_sql.cli._common import fail, stdout, versions
from progress_sql.data.tasks import resolve_task
from progress_sql.errors import ProgressSQLError
from progress_sql.execution.compare import PRESETS, get_preset
from progress_sql.progress import progress_bar
from progress_sql.testsuite.build import build_suites, schema_jobs
from progress_sql.testsuite.distill import SchemaSuite, SuiteConfig
from progress_sql.testsuite.manifest import coverage_summary, write_manifest


def build_suite_command(
    task: str = typer.Option(
        ..., "--task", help="A registered task (spider-dev, ...) or a Spider-format questions file."
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Folder in the benchmark's release layout."),
    out: Path = typer.Option(..., "--out", help="Suite folder: <db_id>/*.sqlite and manifest.json."),
    seed: int = typer.Option(0, "--seed", help="Seed of the fuzzed databases (same seed: same bytes)."),
    pool: int = typer.Option(24, "--pool", help="Fuzzed databases tried per schema."),
    max_dbs: int = typer.Option(10, "--max-dbs", help="Most databases per suite, the original included."),
    db: list[str] = typer.Option([], "--db", help="Only these db_ids (repeatable)."),
    preset: str | None = typer.Option(None, "--preset", help=f"Comparison semantics ({', '.join(PRESETS)})."),
    timeout: float = typer.Option(2.0, "--timeout", help="Seconds per query while building."),
    workers: int = typer.Option(0, "--workers", help="Schemas built in parallel (0: one per core)."),
    json_output: bool = typer.Option(False, "--json", help="Print the coverage summary as JSON."),
) -> None:
    """Build test suites for test-suite accuracy: fuzz, find neighbours, distil by set cover."""
    if pool < 0:
        fail(f"--pool must be >= 0, got {pool}")
    if max_dbs < 1:
        fail(f"--max-dbs must be >= 1 (the original database counts), got {max_dbs}")
    if timeout <= 0:
        fail(f"--timeout must be > 0 seconds, got {timeout}")
    if workers < 0:
        fail(f"--workers must be >= 0, got {workers}")
    try:
        spec, examples = resolve_task(task, data_dir)
        chosen: str = preset or spec.preset
        get_preset(chosen)
    except ProgressSQLError as error:
        fail(str(error))
    jobs, missing = schema_jobs(examples)
    if db:
        unknown = sorted(set(db) - {j.db_id for j in jobs} - set(missing))
        if unknown:
            fail(f"--db names no database of {task}: {', '.join(unknown)}")
        jobs = [j for j in jobs if j.db_id in set(db)]
        missing = [m for m in missing if m in set(db)]
    if not jobs:
        fail(f"no database of {task} is present under {data_dir}")
    try:
        config = SuiteConfig(seed=seed, pool=pool, max_dbs=max_dbs, preset=chosen, timeout_s=timeout)
    except ProgressSQLError as error:
        fail(str(error))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        fail(f"cannot create {out}: {error}")
    started = time.perf_counter()
    with progress_bar("[bold]build-suite[/] {task.description}", console=stdout, quiet=json_output) as bar:
        job = bar.add_task(f"{len(jobs)} schemas, pool {pool}", total=len(jobs))
        judged = bar.add_task("fuzzed databases judged", total=len(jobs) * pool)
        parallel = (workers or os.cpu_count() or 1) > 1 and len(jobs) > 1

        def finished(suite: SchemaSuite) -> None:
            bar.update(job, advance=1, description=f"{suite.db_id} done ({len(suite.databases)} databases)")
            if parallel:  # steps inside a worker process are not heard: count the schema's pool at once
                bar.advance(judged, pool)

        def step(note: str) -> None:
            if "pool database" in note:
                bar.advance(judged, 1)

        try:
            suites = build_suites(
                jobs, out, config, workers=workers or os.cpu_count() or 1, on_done=finished, on_step=step
            )
        except ProgressSQLError as error:  # an unreadable database: say which
            fail(str(error))
    manifest = write_manifest(out, config, suites, versions())
    elapsed = time.perf_counter() - started
    summary = coverage_summary(suites)
    if json_output:
        typer.echo(json.dumps({"coverage": summary, "elapsed_s": round(elapsed, 3), "missing": missing}, indent=2))
        return
    for suite in suites:
        values = [g.coverage for g in suite.golds if g.coverage is not None]
        shown = f"{100 * sum(values) / len(values):.1f}%" if values else "n/a"
        note = f", foreign keys exempted: {', '.join(suite.invalid_foreign_keys)}" if suite.invalid_foreign_keys else ""
        stdout.print(f"  {suite.db_id}: {len(suite.databases)} fuzzed + original, coverage {shown}{note}")
    if missing:
        stdout.print(f"database absent (no suite): {', '.join(missing)}")
    mean = summary.get("mean")
    stdout.print(
        f"mean neighbour coverage: [bold]{'n/a' if mean is None else f'{100 * mean:.2f}%'}[/] over "
        f"{summary['with_neighbours']} gold queries; {elapsed:.1f} s; manifest: {manifest}"
    )


def register(app: typer.Typer) -> None:
    app.command("build-suite")(build_suite_command)
