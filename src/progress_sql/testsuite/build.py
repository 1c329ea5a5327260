"""Build suites for many databases, one ``spawn`` worker process per schema (fuzzing and execution are
CPU-bound and independent), and write the manifest; results are sorted by ``db_id``, so the manifest
does not depend on which worker finished first."""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from progress_sql.cluster.shards import ShardRunner
from progress_sql.data.loaders import database_problem
from progress_sql.execution.lifetime import BoundProcessPool
from progress_sql.testsuite.distill import Progress, SchemaSuite, SuiteConfig, build_schema_suite
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class SchemaJob:
    """One database and the gold queries on it (in dataset order)."""

    db_id: str
    db_path: str
    golds: tuple[str, ...]


def schema_jobs(examples: Sequence[Example]) -> tuple[list[SchemaJob], list[str]]:
    """One job per database that can be used, and the db_ids whose database cannot (absent or bad:
    :func:`~progress_sql.data.loaders.database_problem`)."""
    golds: dict[tuple[str, str], list[str]] = {}
    first: dict[tuple[str, str], Example] = {}
    for example in examples:
        golds.setdefault((example.db_id, example.db_path), []).append(example.gold_sql)
        first.setdefault((example.db_id, example.db_path), example)
    jobs, missing = [], []
    for (db_id, db_path), queries in sorted(golds.items()):
        if database_problem(first[db_id, db_path]) is None:
            jobs.append(SchemaJob(db_id, db_path, tuple(queries)))
        else:
            missing.append(db_id)
    return jobs, missing


def _build(job: SchemaJob, out: str, config: SuiteConfig, progress: Progress | None = None) -> SchemaSuite:
    return build_schema_suite(job.db_id, job.db_path, job.golds, out, config, progress)


def build_suites(
    jobs: Sequence[SchemaJob],
    out: str | Path,
    config: SuiteConfig,
    *,
    workers: int = 1,
    on_done: Callable[[SchemaSuite], None] | None = None,
    on_step: Progress | None = None,
    cluster: ShardRunner | None = None,
) -> list[SchemaSuite]:
    """Build every job's suite under ``out``; ``workers`` > 1 runs schemas in parallel processes.
    ``on_step`` hears each step inside a schema (only when schemas are built in this process).
    With ``cluster`` the schemas are built on its nodes (docs/scaling.md) and their files come back
    here to be written under ``out``: the same files and suites as a one-machine build."""
    done: list[SchemaSuite] = []
    if cluster is not None:
        run = cluster.stream(
            partial(_build_portable, config), list(jobs), db_path=_job_db_path, relocate=_relocated_job,
            restore=_restored_suite,
        )  # fmt: skip
        for _, (suite, files) in run:  # in input order, as the shards come back
            _write_suite_files(Path(out) / suite.db_id, files)
            done.append(suite)
            if on_done is not None:
                on_done(suite)
    elif workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            done.append(_build(job, str(out), config, on_step))
            if on_done is not None:
                on_done(done[-1])
    else:
        context = multiprocessing.get_context("spawn")
        # Processes that end with this one, and at once on an interrupt (execution/lifetime.py).
        with BoundProcessPool(min(workers, len(jobs)), context) as executor:
            # Biggest schemas first, so one slow schema does not start last.
            ordered = sorted(jobs, key=lambda j: -len(j.golds))
            futures = [executor.submit(_build, job, str(out), config) for job in ordered]
            for future in as_completed(futures):
                done.append(future.result())
                if on_done is not None:
                    on_done(done[-1])
    return sorted(done, key=lambda s: s.db_id)


PortableSuite = tuple[SchemaSuite, dict[str, bytes]]
"""A suite built on a cluster node: the suite and its chosen files' bytes by name."""


def _build_portable(config: SuiteConfig, jobs: list[SchemaJob]) -> list[PortableSuite]:
    """One cluster shard: each schema built into a folder of the node's own, its files read back."""
    built: list[PortableSuite] = []
    for job in jobs:
        scratch = Path(tempfile.mkdtemp(prefix=f"suite-{job.db_id}-"))
        try:
            suite = _build(job, str(scratch), config)
            folder = scratch / job.db_id
            built.append((suite, {name: (folder / name).read_bytes() for name in suite.databases}))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return built


def _write_suite_files(target: Path, files: dict[str, bytes]) -> None:
    """Write a suite's files as a local build leaves them (stale files of an earlier build removed)."""
    target.mkdir(parents=True, exist_ok=True)
    for stale in target.glob("*.sqlite"):
        stale.unlink()
    for name, data in files.items():
        (target / name).write_bytes(data)


def _job_db_path(job: SchemaJob) -> str:
    return job.db_path


def _relocated_job(job: SchemaJob, db_path: str) -> SchemaJob:
    return replace(job, db_path=db_path)


def _restored_suite(built: PortableSuite, job: SchemaJob) -> PortableSuite:
    """A suite built from a node's copy of the database names the original, as a local build does."""
    suite, files = built
    return replace(suite, original=job.db_path), files
