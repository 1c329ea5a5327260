"""Build suites for many databases, one ``spawn`` worker process per schema (fuzzing and execution are
CPU-bound and independent), and write the manifest; results are sorted by ``db_id``, so the manifest
does not depend on which worker finished first."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from progress_sql.testsuite.distill import Progress, SchemaSuite, SuiteConfig, build_schema_suite
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class SchemaJob:
    """One database and the gold queries on it (in dataset order)."""

    db_id: str
    db_path: str
    golds: tuple[str, ...]


def schema_jobs(examples: Sequence[Example]) -> tuple[list[SchemaJob], list[str]]:
    """One job per database present, and the db_ids whose database file is absent."""
    golds: dict[tuple[str, str], list[str]] = {}
    for example in examples:
        golds.setdefault((example.db_id, example.db_path), []).append(example.gold_sql)
    jobs, missing = [], []
    for (db_id, db_path), queries in sorted(golds.items()):
        if Path(db_path).is_file():
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
) -> list[SchemaSuite]:
    """Build every job's suite under ``out``; ``workers`` > 1 runs schemas in parallel processes.
    ``on_step`` hears each step inside a schema (only when schemas are built in this process)."""
    done: list[SchemaSuite] = []
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            done.append(_build(job, str(out), config, on_step))
            if on_done is not None:
                on_done(done[-1])
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as executor:
            # Biggest schemas first, so one slow schema does not start last.
            ordered = sorted(jobs, key=lambda j: -len(j.golds))
            futures = [executor.submit(_build, job, str(out), config) for job in ordered]
            for future in as_completed(futures):
                done.append(future.result())
                if on_done is not None:
                    on_done(done[-1])
    return sorted(done, key=lambda s: s.db_id)
