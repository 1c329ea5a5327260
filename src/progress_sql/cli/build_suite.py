"""``progress-sql build-suite``: distil test suites (fuzzed databases) for a task's databases; the
suite folder: docs/testsuite.md#the-suite-folder. ``eval --suite OUT`` then reports TS beside EX."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer

from progress_sql.cli import _common as common
from progress_sql.data.tasks import resolve_task
from progress_sql.judge.compare import get_preset
from progress_sql.progress import progress_bar
from progress_sql.runfolder import RunSummary, basic_report, package_versions
from progress_sql.testsuite.build import build_suites, schema_jobs
from progress_sql.testsuite.distill import SchemaSuite, SuiteConfig
from progress_sql.testsuite.manifest import coverage_summary, write_manifest


def build_suite_command(
    task: str = common.task_option(),
    data_dir: Path | None = common.data_dir_option(),
    out: Path = common.out_dir_option(also="<db_id>/*.sqlite, manifest.json"),
    seed: int = typer.Option(0, "--seed", help="Seed of the fuzzed databases (same seed: same bytes)."),
    pool: int = typer.Option(24, "--pool", help="Fuzzed databases tried per schema."),
    max_dbs: int = typer.Option(10, "--max-dbs", help="Most databases per suite, the original included."),
    db: list[str] = typer.Option([], "--db", help="Only these db_ids (repeatable)."),
    preset: str | None = common.preset_option(),
    timeout: float = common.timeout_option("build-suite"),
    workers: int = common.workers_option(),
    json_output: bool = common.json_option(),
    ray: str | None = common.ray_option(),
    ray_databases: str = common.ray_databases_option(),
) -> None:
    """Build test suites for test-suite accuracy: fuzz, find neighbours, distil by set cover."""
    if pool < 0:
        common.fail(f"--pool must be >= 0, got {pool}")
    if max_dbs < 1:
        common.fail(f"--max-dbs must be >= 1 (the original database counts), got {max_dbs}")
    common.check_timeout(timeout)
    processes = common.resolve_shard_workers(workers, ray)
    spec, examples = resolve_task(task, data_dir)
    chosen: str = preset or spec.preset
    get_preset(chosen)
    jobs, missing = schema_jobs(examples)
    if db:
        unknown = sorted(set(db) - {j.db_id for j in jobs} - set(missing))
        if unknown:
            common.fail(f"--db names no database of {task}: {', '.join(unknown)}")
        jobs = [j for j in jobs if j.db_id in set(db)]
        missing = [m for m in missing if m in set(db)]
    if not jobs:
        common.fail(f"no database of {task} is present under {data_dir}")
    config = SuiteConfig(seed=seed, pool=pool, max_dbs=max_dbs, preset=chosen, timeout_s=timeout)
    common.prepare_out(out)
    started = time.perf_counter()
    with progress_bar("[bold]build-suite[/] {task.description}", console=common.stdout, quiet=json_output) as bar:
        job = bar.add_task(f"{len(jobs)} schemas, pool {pool}", total=len(jobs))
        judged = bar.add_task("fuzzed databases judged", total=len(jobs) * pool)
        parallel = (processes > 1 and len(jobs) > 1) or ray is not None

        def finished(suite: SchemaSuite) -> None:
            bar.update(job, advance=1, description=f"{suite.db_id} done ({len(suite.databases)} databases)")
            if parallel:  # steps inside a worker process are not heard: count the schema's pool at once
                bar.advance(judged, pool)

        def step(note: str) -> None:
            if "pool database" in note:
                bar.advance(judged, 1)

        # an unreadable database raises a ProgressSQLError that names it
        with common.cluster_for(ray, ray_databases, workers) as cluster:
            suites = build_suites(jobs, out, config, workers=processes, on_done=finished, on_step=step, cluster=cluster)
    manifest = write_manifest(out, config, suites, package_versions())
    elapsed = time.perf_counter() - started
    summary = coverage_summary(suites)
    settings = {"task": task, "data_dir": str(data_dir) if data_dir else None, "db": list(db),
                "workers": workers or None, **asdict(config),
                **({"ray": ray, "ray_databases": ray_databases} if ray is not None else {})}  # fmt: skip
    results = {"coverage": summary, "elapsed_s": round(elapsed, 3), "missing": missing, "manifest": str(manifest)}
    run = RunSummary("build-suite", settings, results)
    report = basic_report(f"Test suites: {task}", run.to_dict(), results=results, notes=_notes(suites))
    common.write_run(out, run, _gold_records(suites), report)
    if json_output:
        typer.echo(json.dumps(run.to_dict(), indent=2))
        return
    for suite in suites:
        values = [g.coverage for g in suite.golds if g.coverage is not None]
        shown = f"{100 * sum(values) / len(values):.1f}%" if values else "n/a"
        note = f", foreign keys exempted: {', '.join(suite.invalid_foreign_keys)}" if suite.invalid_foreign_keys else ""
        common.stdout.print(f"  {suite.db_id}: {len(suite.databases)} fuzzed + original, coverage {shown}{note}")
    if missing:
        common.stdout.print(f"database absent (no suite): {', '.join(missing)}")
    mean = summary.get("mean")
    common.stdout.print(
        f"mean neighbour coverage: [bold]{'n/a' if mean is None else f'{100 * mean:.2f}%'}[/] over "
        f"{summary['with_neighbours']} gold queries; {elapsed:.1f} s; manifest: {manifest}"
    )


def _gold_records(suites: Sequence[SchemaSuite]) -> list[dict[str, Any]]:
    """samples.jsonl: one record per gold query, with its database and its suite coverage."""
    return [{"db_id": s.db_id, **asdict(g)} for s in suites for g in s.golds]


def _notes(suites: Sequence[SchemaSuite]) -> list[str]:
    notes = []
    for suite in suites:
        values = [g.coverage for g in suite.golds if g.coverage is not None]
        shown = f"{100 * sum(values) / len(values):.1f}%" if values else "n/a"
        notes.append(f"`{suite.db_id}`: {len(suite.databases)} fuzzed databases + the original, coverage {shown}")
    return notes


def register(app: typer.Typer) -> None:
    common.add_command(app, "build-suite", build_suite_command)
