"""Distil a test suite for one database: the original first, then a few fuzzed databases chosen by
greedy set cover so that the gold queries disagree with as many of their neighbours as possible
(A.3.2 of docs/evaluation-semantics.md).

For one schema and all the gold queries on it:

1. each gold's neighbours (:mod:`.neighbors`) that execute on the original; those whose result
   already differs there are covered by the original;
2. a pool of ``pool`` fuzzed databases (:mod:`.fuzz`) seeded by (seed, db_id, k);
3. on every pool database, each gold runs twice, scanning tables forwards and backwards: a gold that
   fails, times out, exceeds the row cap or whose result depends on scan order there (ties at a
   LIMIT) drops that database *for that gold*; otherwise the neighbours still alive run, and those
   whose result differs are what the database covers;
4. greedy set cover up to ``max_dbs`` databases in all (the original counts as one); besides the
   neighbours, each gold's own original result written as constants is an item to cover (a
   database where the gold's result changes), so that no suite leaves hard-coded answers passing.

"Differs" is the comparison preset's own :func:`~progress_sql.execution.compare.judge`, as in EX and
TS. Queries run in this process through :class:`~progress_sql.execution.executor.Executor`, with its
deadline, row and byte caps; the golds and their neighbours are the builder's own queries.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from progress_sql.execution.compare import Preset, get_preset, judge
from progress_sql.execution.executor import ExecLimits, Executor
from progress_sql.testsuite.fuzz import FuzzReport, fuzz_database, gold_constants, profile_schema
from progress_sql.testsuite.neighbors import neighbour_candidates
from progress_sql.testsuite.profile import read_profile
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
            raise ValueError(f"pool must be >= 0, got {self.pool}")
        if self.max_dbs < 1:
            raise ValueError(f"max_dbs must be >= 1 (the original database), got {self.max_dbs}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")

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
    profile = read_profile(db_path)
    schema = profile_schema(profile)
    unique_golds = list(dict.fromkeys(golds))
    forward, backward = Executor(), Executor(reverse_unordered=True)
    try:
        gold_on_original: list[list[ExecResult]] = []
        alive: list[list[str]] = []  # per gold: prepared neighbours the original cannot tell apart
        counts: list[tuple[int, int]] = []  # per gold: (neighbours kept, killed by the original)
        problems: list[str | None] = []
        for gold in unique_golds:
            results = _run(forward, original, preset, gold, limits)
            gold_on_original.append(results)
            problem = _usable(results)
            problems.append(None if problem is None else f"on the original: {problem}")
            survivors: list[str] = []
            kept = killed = 0
            if problem is None:
                own = preset.prepare_pred(gold)
                for candidate in neighbour_candidates(gold, schema):
                    prepared = preset.prepare_pred(candidate)
                    if prepared == own:
                        continue
                    result = forward.run(original, prepared, limits)
                    if result.status != "ok":
                        continue  # only neighbours that execute on the original count
                    kept += 1
                    if _differs(preset, gold, results, result):
                        killed += 1
                    else:
                        survivors.append(prepared)
            alive.append(list(dict.fromkeys(survivors)))
            counts.append((kept, killed))
        note(f"{db_id}: neighbours ready")

        constants = gold_constants(unique_golds, profile)
        work = Path(tempfile.mkdtemp(prefix=f"suite-{db_id}-"))
        try:
            reports: list[FuzzReport] = []
            kills: list[set[tuple[int, int]]] = []
            exclusions: list[dict[int, str]] = []  # per pool db: gold index -> why it is left out
            for k in range(config.pool):
                path = str(work / pool_name(k))
                reports.append(fuzz_database(profile, constants, f"{config.seed}:{db_id}:{k}", path))
                killed_here: set[tuple[int, int]] = set()
                left_out: dict[int, str] = {}
                for g, gold in enumerate(unique_golds):
                    if problems[g] is not None:
                        continue
                    results = _run(forward, path, preset, gold, limits)
                    problem = _usable(results)
                    if problem is None:
                        reverse = _run(backward, path, preset, gold, limits)
                        if _usable(reverse) is None and not judge(preset, gold, results, reverse[0]).match:
                            problem = "gold result depends on scan order (ties)"
                    if problem is not None:
                        left_out[g] = problem
                        continue
                    if not judge(preset, gold, gold_on_original[g], results[0]).match:
                        killed_here.add((g, ANSWER_CHANGES))
                    for n, prepared in enumerate(alive[g]):
                        if _differs(preset, gold, results, forward.run(path, prepared, limits)):
                            killed_here.add((g, n))
                forward.close()
                backward.close()
                kills.append(killed_here)
                exclusions.append(left_out)
                note(f"{db_id}: pool database {k + 1} of {config.pool}")
            chosen = _greedy_cover(kills, config.max_dbs - 1)
            target = Path(out_dir) / db_id
            target.mkdir(parents=True, exist_ok=True)
            for stale in target.glob("*.sqlite"):
                stale.unlink()
            for k in chosen:
                shutil.copyfile(work / pool_name(k), target / pool_name(k))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        forward.close()
        backward.close()
    names = tuple(pool_name(k) for k in chosen)
    coverage = []
    for g, gold in enumerate(unique_golds):
        kept, killed = counts[g]
        covered = killed + len({n for k in chosen for (h, n) in kills[k] if h == g and n != ANSWER_CHANGES})
        excluded = {pool_name(k): exclusions[k][g] for k in chosen if g in exclusions[k]}
        coverage.append(
            GoldCoverage(
                sql=gold,
                databases=tuple(name for name in names if name not in excluded),
                excluded=excluded,
                neighbours=kept,
                killed_by_original=killed,
                covered=covered,
                coverage=round(covered / kept, 6) if kept else None,
                answer_changes=any((g, ANSWER_CHANGES) in kills[k] for k in chosen),
                problem=problems[g],
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
