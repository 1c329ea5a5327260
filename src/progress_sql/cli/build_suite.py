"""``progress-sql build-suite``: distil test suites (fuzzed databases) for a task's databases; the
suite folder: docs/testsuite.md#the-suite-folder. ``eval --suite OUT`` then reports TS beside EX."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from progress_sql.cli import _common as common
from progress_sql.progress import progress_bar
from progress_sql.testsuite.run import SuiteRequest, build_suite_run


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
    common.check_timeout(timeout)
    request = SuiteRequest(
        task, out, data_dir, seed, pool, max_dbs, tuple(db), preset, timeout, workers,
        common.resolve_shard_workers(workers, ray), ray, ray_databases,
    )  # fmt: skip
    with progress_bar("[bold]build-suite[/] {task.description}", console=common.stdout, quiet=json_output) as bar:
        built = build_suite_run(request, bar)
    if json_output:
        typer.echo(json.dumps(built.summary.to_dict(), indent=2))
        return
    for suite in built.suites:
        values = [g.coverage for g in suite.golds if g.coverage is not None]
        shown = f"{100 * sum(values) / len(values):.1f}%" if values else "n/a"
        note = f", foreign keys exempted: {', '.join(suite.invalid_foreign_keys)}" if suite.invalid_foreign_keys else ""
        common.stdout.print(f"  {suite.db_id}: {len(suite.databases)} fuzzed + original, coverage {shown}{note}")
    results = built.summary.results
    if results["missing"]:
        common.stdout.print(f"database absent (no suite): {', '.join(results['missing'])}")
    coverage, mean = results["coverage"], results["coverage"].get("mean")
    common.stdout.print(
        f"mean neighbour coverage: [bold]{'n/a' if mean is None else f'{100 * mean:.2f}%'}[/] over "
        f"{coverage['with_neighbours']} gold queries; {results['elapsed_s']:.1f} s; manifest: {results['manifest']}"
    )


def register(app: typer.Typer) -> None:
    common.add_command(app, "build-suite", build_suite_command)
