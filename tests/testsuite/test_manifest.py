"""Which suite databases judge a gold: the manifest's per-gold list, scan-order exclusions, and the
plain ``<db_id>/*.sqlite`` listing without a manifest."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from progress_sql.data.schema import Schema
from progress_sql.execution.executor import DEFAULT_LIMITS, REVERSED_SCANS, Executor
from progress_sql.judge.compare import get_preset
from progress_sql.testsuite.distill import _greedy_cover, _judge_pool_database, _on_original
from progress_sql.testsuite.manifest import MANIFEST, coverage_summary, suite_databases, suite_lookup
from progress_sql.testsuite.profile import read_fuzz_profile
from progress_sql.types import Example
from tests.conftest import build_database

TIED = "SELECT name FROM member WHERE age > 40 LIMIT 1"  # which of the two? the scan order decides
ALL_TIES = "SELECT name FROM member WHERE age = (SELECT max(age) FROM member)"


def test_scan_order_dependent_gold_leaves_the_database_out(tmp_path: Path) -> None:
    original = build_database("false_positives.sql", tmp_path / "o")
    tied = build_database("ties.sql", tmp_path / "t")
    preset = get_preset("spider")
    schema = Schema.from_profile(read_fuzz_profile(original))
    executors = (Executor(), Executor(pragmas=REVERSED_SCANS))
    golds = [_on_original(sql, str(original), schema, preset, executors[0], DEFAULT_LIMITS) for sql in (TIED, ALL_TIES)]
    covers, left_out = _judge_pool_database(str(tied), golds, preset, executors, DEFAULT_LIMITS)
    assert left_out == {0: "gold result depends on scan order"}
    assert (1, -1) in covers  # the tie-keeping gold's answer changes: two names instead of one
    assert any(g == 1 and n >= 0 for g, n in covers)  # and its LIMIT 1 neighbour is told apart


def test_manifest_assigns_files_per_gold(tmp_path: Path) -> None:
    built = build_database("ties.sql", tmp_path / "build")
    (tmp_path / "shop").mkdir()
    for name in ("fuzz_000.sqlite", "fuzz_001.sqlite"):
        shutil.copyfile(built, tmp_path / "shop" / name)
    assert suite_databases(tmp_path, "shop", TIED) == [str(tmp_path / "shop" / f"fuzz_00{k}.sqlite") for k in (0, 1)]
    manifest = {"databases": {"shop": {"golds": [{"sql": TIED, "databases": ["fuzz_001.sqlite"]}]}}}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    assert suite_databases(tmp_path, "shop", TIED) == [str(tmp_path / "shop" / "fuzz_001.sqlite")]
    assert len(suite_databases(tmp_path, "shop", "SELECT 1")) == 2  # a gold the manifest does not list
    assert suite_databases(tmp_path, "other", TIED) == []


def test_suite_lookup_tells_an_uncovered_database_from_an_empty_assignment(tmp_path: Path) -> None:
    built = build_database("ties.sql", tmp_path / "build")
    (tmp_path / "shop").mkdir()
    shutil.copyfile(built, tmp_path / "shop" / "fuzz_000.sqlite")
    manifest = {"databases": {"shop": {"golds": [{"sql": TIED, "databases": []}]}}}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    lookup = suite_lookup(tmp_path)
    shop = Example(0, "?", "shop", str(built), "SELECT 1")
    assert lookup(shop) == (str(tmp_path / "shop" / "fuzz_000.sqlite"),)
    assert lookup(replace(shop, gold_sql=TIED)) == ()  # covered, but no file judges this gold
    assert lookup(replace(shop, db_id="other")) is None  # the suite has nothing for this database
    assert lookup == suite_lookup(str(tmp_path))
    assert lookup != suite_lookup(tmp_path / "shop")


@given(
    st.lists(st.sets(st.tuples(st.integers(0, 3), st.integers(-1, 4)), max_size=6), max_size=8),
    st.integers(0, 8),
)
def test_greedy_cover_respects_the_budget_and_covers_what_it_can(
    kills: list[set[tuple[int, int]]], budget: int
) -> None:
    chosen = _greedy_cover(kills, budget)
    assert len(chosen) <= budget
    assert len(set(chosen)) == len(chosen)
    assert all(kills[k] for k in chosen)  # never a database that covers nothing new
    if budget >= len(kills):
        covered = set().union(*(kills[k] for k in chosen))
        assert covered == set().union(*kills)


def test_coverage_summary_of_nothing() -> None:
    assert coverage_summary([]) == {"golds": 0, "with_neighbours": 0, "mean": None}


def test_reverse_scan_changes_only_order_dependent_results(tmp_path: Path) -> None:
    db = build_database("ties.sql", tmp_path)
    forward, backward = Executor(), Executor(pragmas=REVERSED_SCANS)
    try:
        for sql, changes in [(TIED, True), ("SELECT name FROM member ORDER BY age DESC, name LIMIT 1", False)]:
            first, second = forward.run(db, sql), backward.run(db, sql)
            assert first.ok
            assert second.ok
            assert (first.rows != second.rows) == changes, sql
    finally:
        forward.close()
        backward.close()
