"""Distil a test suite for one database: the original first, then a few fuzzed databases chosen by
greedy set cover (docs/testsuite.md#how-a-suite-is-built). Queries run in this process through the
guarded :class:`~progress_sql.execution.executor.Executor`: the golds and neighbours are the builder's own."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from progress_sql.data.schema import Schema
from progress_sql.errors import ConfigError
from progress_sql.execution.executor import REVERSED_SCANS, ExecLimits, Executor
from progress_sql.judge.compare import Preset, get_preset, judge
from progress_sql.testsuite.fuzz import FuzzReport, fuzz_database
from progress_sql.testsuite.hints import gold_constants, join_links
from progress_sql.testsuite.neighbors import neighbour_candidates
from progress_sql.testsuite.profile import read_fuzz_profile
from progress_sql.types import ExecResult

Progress = Callable[[str], None]  # called with a short note after each step

#: A pseudo-neighbour of every gold: its own result on the original, hard-coded. A database covers
#: it when the gold's result there differs, so the set cover keeps such a database for every gold.
ANSWER_CHANGES = -1


@dataclass(frozen=True, slots=True)
class SuiteConfig:
    """How suites are built. ``max_dbs`` counts the original database."""

    seed: int = 0
    pool: int = 24
    max_dbs: int = 10
    preset: str = "spider"
    timeout_s: float = 2.0
    max_rows: int = 20_000

    def __post_init__(self) -> None:
        if self.pool < 0:
            raise ConfigError(f"SuiteConfig.pool must be >= 0, got {self.pool}")
        if self.max_dbs < 1:
            raise ConfigError(f"SuiteConfig.max_dbs must be >= 1 (the original database), got {self.max_dbs}")
        if self.timeout_s <= 0:
            raise ConfigError(f"SuiteConfig.timeout_s must be > 0, got {self.timeout_s}")
        get_preset(self.preset)

    @property
    def limits(self) -> ExecLimits:
        return ExecLimits(timeout_s=self.timeout_s, max_rows=self.max_rows)


@dataclass(frozen=True, slots=True)
class GoldCoverage:
    """One gold query's part of a suite. ``databases``: the suite files it is judged on (the
    original aside); ``excluded``: suite files left out for it, with why; ``coverage``: the share of
    its neighbours that the original or a suite database tells apart from it (None: no neighbour);
    ``answer_changes``: some suite database gives it another result than the original does, so its
    original answer written as constants fails TS."""

    sql: str
    databases: tuple[str, ...]
    excluded: dict[str, str]
    neighbours: int
    killed_by_original: int
    covered: int
    coverage: float | None
    answer_changes: bool = False
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class SchemaSuite:
    """The suite of one database: chosen files (in the order chosen) and per-gold coverage."""

    db_id: str
    original: str
    databases: tuple[str, ...]
    golds: tuple[GoldCoverage, ...]
    invalid_foreign_keys: dict[str, str] = field(default_factory=dict)
    pool_size: int = 0


def _run(executor: Executor, db: str, preset: Preset, gold: str, limits: ExecLimits) -> list[ExecResult]:
    return [executor.run(db, sql, limits) for sql in preset.gold_queries(gold)]


def _usable(results: Sequence[ExecResult]) -> str | None:
    main = results[0]
    if main.status != "ok":
        return f"gold {main.status}: {main.error}" if main.error else f"gold {main.status}"
    if main.truncated:
        return "gold result exceeds the row cap"
    return None


def _differs(preset: Preset, gold_sql: str, gold: Sequence[ExecResult], neighbour: ExecResult) -> bool:
    if neighbour.status != "ok":
        return False  # a failure says nothing about meaning (and never happens on the original)
    return not judge(preset, gold_sql, gold, neighbour).match


def pool_name(k: int) -> str:
    return f"fuzz_{k:03d}.sqlite"


@dataclass(frozen=True, slots=True)
class _GoldOnOriginal:
    """A gold's results on the original, and its neighbours: kept (execute there), killed there,
    and the prepared SQL of those still alive (the original cannot tell them apart)."""

    sql: str
    results: tuple[ExecResult, ...]
    problem: str | None
    kept: int = 0
    killed: int = 0
    alive: tuple[str, ...] = ()


def _on_original(
    gold: str, original: str, schema: Schema, preset: Preset, executor: Executor, limits: ExecLimits
) -> _GoldOnOriginal:
    results = tuple(_run(executor, original, preset, gold, limits))
    problem = _usable(results)
    if problem is not None:
        return _GoldOnOriginal(gold, results, f"on the original: {problem}")
    own = preset.prepare_pred(gold)
    kept = killed = 0
    alive: dict[str, None] = {}
    for candidate in neighbour_candidates(gold, schema):
        prepared = preset.prepare_pred(candidate)
        if prepared == own:
            continue
        result = executor.run(original, prepared, limits)
        if result.status != "ok":
            continue  # only neighbours that execute on the original count
        kept += 1
        if _differs(preset, gold, results, result):
            killed += 1
        else:
            alive[prepared] = None
    return _GoldOnOriginal(gold, results, None, kept, killed, tuple(alive))


def _judge_pool_database(
    path: str,
    golds: Sequence[_GoldOnOriginal],
    preset: Preset,
    executors: tuple[Executor, Executor],
    limits: ExecLimits,
) -> tuple[set[tuple[int, int]], dict[int, str]]:
    """What one pool database covers, as (gold index, neighbour index) items, and the golds it is
    left out for (with why)."""
    forward, backward = executors
    covers: set[tuple[int, int]] = set()
    left_out: dict[int, str] = {}
    for g, gold in enumerate(golds):
        if gold.problem is not None:
            continue
        results = _run(forward, path, preset, gold.sql, limits)
        problem = _usable(results)
        if problem is None:
            reverse = _run(backward, path, preset, gold.sql, limits)
            if _usable(reverse) is None and not judge(preset, gold.sql, results, reverse[0]).match:
                problem = "gold result depends on scan order"
        if problem is not None:
            left_out[g] = problem
            continue
        if not judge(preset, gold.sql, gold.results, results[0]).match:
            covers.add((g, ANSWER_CHANGES))
        for n, prepared in enumerate(gold.alive):
            if _differs(preset, gold.sql, results, forward.run(path, prepared, limits)):
                covers.add((g, n))
    forward.close()  # release the file before the pool folder is removed
    backward.close()
    return covers, left_out


def build_schema_suite(
    db_id: str,
    db_path: str | Path,
    golds: Sequence[str],
    out_dir: str | Path,
    config: SuiteConfig = SuiteConfig(),
    progress: Progress | None = None,
) -> SchemaSuite:
    """Build ``out_dir/<db_id>/fuzz_<k>.sqlite`` for the chosen pool databases and say how well the
    suite covers each gold's neighbours."""
    note = progress or (lambda _text: None)
    preset = get_preset(config.preset)
    limits = config.limits
    original = str(db_path)
    profile = read_fuzz_profile(db_path)
    schema = Schema.from_profile(profile)
    executors = (Executor(), Executor(pragmas=REVERSED_SCANS))
    work = Path(tempfile.mkdtemp(prefix=f"suite-{db_id}-"))
    try:
        on_original = [
            _on_original(gold, original, schema, preset, executors[0], limits) for gold in dict.fromkeys(golds)
        ]
        note(f"{db_id}: neighbours ready")
        constants = gold_constants([g.sql for g in on_original], profile)
        joins = join_links([g.sql for g in on_original], profile)
        reports: list[FuzzReport] = []
        covers: list[set[tuple[int, int]]] = []
        exclusions: list[dict[int, str]] = []
        for k in range(config.pool):
            path = str(work / pool_name(k))
            reports.append(fuzz_database(profile, constants, f"{config.seed}:{db_id}:{k}", path, joins))
            items, left_out = _judge_pool_database(path, on_original, preset, executors, limits)
            covers.append(items)
            exclusions.append(left_out)
            note(f"{db_id}: pool database {k + 1} of {config.pool}")
        chosen = _greedy_cover(covers, config.max_dbs - 1)
        target = Path(out_dir) / db_id
        target.mkdir(parents=True, exist_ok=True)
        for stale in target.glob("*.sqlite"):
            stale.unlink()
        for k in chosen:
            shutil.copyfile(work / pool_name(k), target / pool_name(k))
    finally:
        for executor in executors:
            executor.close()
        shutil.rmtree(work, ignore_errors=True)
    names = tuple(pool_name(k) for k in chosen)
    coverage = []
    for g, gold in enumerate(on_original):
        killed_by_suite = {n for k in chosen for (h, n) in covers[k] if h == g and n != ANSWER_CHANGES}
        covered = gold.killed + len(killed_by_suite)
        excluded = {pool_name(k): exclusions[k][g] for k in chosen if g in exclusions[k]}
        coverage.append(
            GoldCoverage(
                sql=gold.sql,
                databases=tuple(name for name in names if name not in excluded),
                excluded=excluded,
                neighbours=gold.kept,
                killed_by_original=gold.killed,
                covered=covered,
                coverage=round(covered / gold.kept, 6) if gold.kept else None,
                answer_changes=any((g, ANSWER_CHANGES) in covers[k] for k in chosen),
                problem=gold.problem,
            )
        )
    invalid = dict(reports[0].invalid_foreign_keys) if reports else {}
    return SchemaSuite(db_id, original, names, tuple(coverage), invalid, config.pool)


def _greedy_cover(kills: Sequence[set[tuple[int, int]]], budget: int) -> list[int]:
    """Greedy set cover: repeatedly take the database that covers most uncovered items (the lowest
    index on ties), until nothing is left to cover or ``budget`` databases are taken.

    >>> _greedy_cover([{(0, 0)}, {(0, 0), (0, 1)}, {(0, 2)}], 5)
    [1, 2]
    """
    uncovered = set().union(*kills) if kills else set()
    chosen: list[int] = []
    while uncovered and len(chosen) < budget:
        best = max(range(len(kills)), key=lambda k: (len(kills[k] & uncovered), -k))
        gain = kills[best] & uncovered
        if not gain:
            break
        chosen.append(best)
        uncovered -= gain
    return chosen
