"""``build-suite`` as a library call: :class:`SuiteRequest` (what the command's options say) ->
:func:`build_suite_run` (the suites of a task's databases, their manifest and the run folder)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.progress import Progress

from progress_sql.cluster.connect import joined_cluster
from progress_sql.data.tasks import resolve_task
from progress_sql.errors import ConfigError
from progress_sql.judge.compare import get_preset
from progress_sql.runfolder import (
    RunFolder,
    RunSummary,
    basic_report,
    package_versions,
    prepared_folder,
    writing_results,
)
from progress_sql.testsuite.build import build_suites, schema_jobs
from progress_sql.testsuite.distill import SchemaSuite, SuiteConfig
from progress_sql.testsuite.manifest import coverage_summary, write_manifest


@dataclass(frozen=True, slots=True)
class SuiteRequest:
    """One ``build-suite`` run as its options give it."""

    task: str
    out: Path
    data_dir: Path | None = None
    seed: int = 0
    pool: int = 24
    max_dbs: int = 10
    db: tuple[str, ...] = ()  # only these db_ids
    preset: str | None = None  # None: the task's
    timeout_s: float = 2.0
    workers: int = 0  # as given, recorded
    processes: int = 1  # resolved: here, or per shard on a cluster
    ray: str | None = None
    ray_databases: str = "shared"


@dataclass(frozen=True, slots=True)
class SuiteRun:
    """Built suites: one per schema, and the run's ``summary.json``."""

    suites: tuple[SchemaSuite, ...]
    summary: RunSummary


def build_suite_run(request: SuiteRequest, bar: Progress) -> SuiteRun:
    """Build the suites (bars on ``bar``: schemas done, fuzzed databases judged), write the manifest
    and the run folder. A bad request raises ConfigError before anything runs."""
    if request.pool < 0:
        raise ConfigError(f"--pool must be >= 0, got {request.pool}")
    if request.max_dbs < 1:
        raise ConfigError(f"--max-dbs must be >= 1 (the original database counts), got {request.max_dbs}")
    spec, examples = resolve_task(request.task, request.data_dir, need_databases=True)
    chosen: str = request.preset or spec.preset
    get_preset(chosen)
    jobs, missing = schema_jobs(examples)
    if request.db:
        wanted = set(request.db)
        unknown = sorted(wanted - {j.db_id for j in jobs} - set(missing))
        if unknown:
            raise ConfigError(f"--db names no database of {request.task}: {', '.join(unknown)}")
        jobs, missing = [j for j in jobs if j.db_id in wanted], [m for m in missing if m in wanted]
    if not jobs:
        raise ConfigError(f"no database of {request.task} is present under {request.data_dir}")
    config = SuiteConfig(
        seed=request.seed, pool=request.pool, max_dbs=request.max_dbs, preset=chosen, timeout_s=request.timeout_s
    )
    out = request.out
    prepared_folder(out)  # before the work starts: a bad path fails at once
    started = time.perf_counter()
    schemas = bar.add_task(f"{len(jobs)} schemas, pool {request.pool}", total=len(jobs))
    judged = bar.add_task("fuzzed databases judged", total=len(jobs) * request.pool)
    parallel = (request.processes > 1 and len(jobs) > 1) or request.ray is not None

    def finished(suite: SchemaSuite) -> None:
        bar.update(schemas, advance=1, description=f"{suite.db_id} done ({len(suite.databases)} databases)")
        if parallel:  # steps inside a worker process are not heard: count the schema's pool at once
            bar.advance(judged, request.pool)

    def step(note: str) -> None:
        if "pool database" in note:
            bar.advance(judged, 1)

    # an unreadable database raises a ProgressSQLError that names it
    with joined_cluster(request.ray, request.ray_databases, request.workers) as cluster:
        suites = build_suites(
            jobs, out, config, workers=request.processes, on_done=finished, on_step=step, cluster=cluster
        )
    manifest = write_manifest(out, config, suites, package_versions())
    elapsed = time.perf_counter() - started
    ray = {"ray": request.ray, "ray_databases": request.ray_databases} if request.ray is not None else {}
    settings = {"task": request.task, "data_dir": str(request.data_dir) if request.data_dir else None,
                "db": list(request.db), "workers": request.workers or None, **asdict(config), **ray}  # fmt: skip
    results = {"coverage": coverage_summary(suites), "elapsed_s": round(elapsed, 3), "missing": missing,
               "manifest": str(manifest)}  # fmt: skip
    run = RunSummary("build-suite", settings, results)
    report = basic_report(f"Test suites: {request.task}", run.to_dict(), results=results, notes=_notes(suites))
    with writing_results(out):
        RunFolder(out).write(run, _gold_records(suites), report)
    return SuiteRun(tuple(suites), run)


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
