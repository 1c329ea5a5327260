"""Fuzzed databases: same schema, constraints kept, gold constants in the pools, same seed same bytes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progress_sql.data.introspect import DatabaseProfile, ForeignKey
from progress_sql.testsuite.fuzz import fuzz_database
from progress_sql.testsuite.hints import gold_constants, join_links
from progress_sql.testsuite.profile import read_fuzz_profile, root_column, table_order
from tests.conftest import build_database

GOLDS = (
    "SELECT name FROM emp WHERE hired > '2010-01-01' AND active = 1",
    'SELECT T1.name FROM emp AS T1 JOIN dept AS T2 ON T1.dept_id = T2.dept_id WHERE T2.name = "Sales"',
    "SELECT count(*) FROM assignment WHERE hours BETWEEN 5 AND 11 AND project IN ('atlas', 'hermes')",
    "SELECT name FROM dept WHERE budget >= 50000.5 OR name LIKE '%Sup%'",
    "SELECT emp_id FROM assignment WHERE emp_id = 3",
    "SELECT T1.name FROM emp AS T1 JOIN review AS T2 ON T2.emp_ref = T1.emp_id WHERE T2.score > 3",
)


@pytest.fixture(scope="module")
def schema_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("fuzz_schema.sql", tmp_path_factory.mktemp("fuzz"))


@pytest.fixture(scope="module")
def profile(schema_db: Path) -> DatabaseProfile:
    return read_fuzz_profile(schema_db)


def _schema(path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()


def test_profile_reads_kinds_keys_and_foreign_keys(profile: DatabaseProfile) -> None:
    kinds = {c.name: c.kind for t in profile.tables.values() for c in t.columns}
    assert kinds["budget"] == "real"
    assert kinds["founded"] == "date"
    assert kinds["hired"] == "date"
    assert kinds["active"] == "boolean"
    assert kinds["dept_id"] == "integer"
    assert kinds["name"] == "text"
    assignment = profile.tables["assignment"]
    assert assignment.primary_key == ("emp_id", "project")
    assert ("name",) in profile.tables["dept"].uniques
    assert [t.name for t in table_order(profile)][:3] == ["dept", "emp", "assignment"]
    assert root_column(profile, "assignment", "emp_id") == ("emp", "emp_id")


def test_gold_constants_go_to_the_generated_column(profile: DatabaseProfile) -> None:
    constants = gold_constants(GOLDS, profile)
    assert constants[("dept", "name")] == ("Sales", "Sup")  # double-quoted literal; LIKE pattern without %
    assert constants[("emp", "hired")] == ("2010-01-01",)
    assert constants[("assignment", "hours")] == (5, 11)
    assert constants[("assignment", "project")] == ("atlas", "hermes")
    assert constants[("dept", "budget")] == (50000.5,)
    assert constants[("emp", "emp_id")] == (3,)  # assignment.emp_id's values come from emp.emp_id


def test_same_seed_same_bytes_and_other_seeds_differ(profile: DatabaseProfile, tmp_path: Path) -> None:
    constants = gold_constants(GOLDS, profile)
    first = fuzz_database(profile, constants, "7:fuzz_schema:0", tmp_path / "a.sqlite")
    fuzz_database(profile, constants, "7:fuzz_schema:0", tmp_path / "b.sqlite")
    fuzz_database(profile, constants, "7:fuzz_schema:1", tmp_path / "c.sqlite")
    assert (tmp_path / "a.sqlite").read_bytes() == (tmp_path / "b.sqlite").read_bytes()
    assert (tmp_path / "a.sqlite").read_bytes() != (tmp_path / "c.sqlite").read_bytes()
    assert first.invalid_foreign_keys == {}
    assert sum(first.rows.values()) > 0


def test_schema_is_the_original_one(schema_db: Path, profile: DatabaseProfile, tmp_path: Path) -> None:
    fuzz_database(profile, {}, "1", tmp_path / "f.sqlite")
    assert _schema(tmp_path / "f.sqlite") == _schema(schema_db)


def _check(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # Composite primary key and UNIQUE hold (the engine enforces them; nothing was forced in).
        pairs = conn.execute("SELECT emp_id, project FROM assignment").fetchall()
        assert len(pairs) == len(set(pairs))
        names = conn.execute("SELECT name FROM dept").fetchall()
        assert len(names) == len(set(names))
        assert conn.execute("SELECT count(*) FROM emp WHERE name IS NULL OR dept_id IS NULL").fetchone() == (0,)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_every_fuzzed_database_keeps_the_constraints(profile: DatabaseProfile, tmp_path: Path, seed: int) -> None:
    path = tmp_path / f"{seed}.sqlite"
    fuzz_database(profile, gold_constants(GOLDS, profile), str(seed), path)
    _check(path)


def test_constants_and_near_misses_show_up(profile: DatabaseProfile, tmp_path: Path) -> None:
    constants = gold_constants(GOLDS, profile)
    seen: set[object] = set()
    for k in range(12):
        path = tmp_path / f"{k}.sqlite"
        fuzz_database(profile, constants, f"0:{k}", path)
        with sqlite3.connect(path) as conn:
            seen.update(v for (v,) in conn.execute("SELECT hours FROM assignment"))
            seen.update(v for (v,) in conn.execute("SELECT name FROM dept"))
    assert {4, 5, 6, 10, 11, 12} <= seen  # the BETWEEN bounds and their neighbours
    assert "Sales" in seen
    assert {"sales", "SALES", "Sale", "ales", "Sales x"} & seen


def test_undeclared_join_links_make_joins_find_rows(profile: DatabaseProfile, tmp_path: Path) -> None:
    joins = join_links(GOLDS, profile)
    # The declared emp.dept_id -> dept link is not repeated; the joined review.emp_ref gets one.
    assert joins == {"review": (ForeignKey(("emp_ref",), "emp", ("emp_id",)),)}
    for k in range(5):
        path = tmp_path / f"{k}.sqlite"
        fuzz_database(profile, gold_constants(GOLDS, profile), f"j{k}", path, joins)
        with sqlite3.connect(path) as conn:
            employees = {e for (e,) in conn.execute("SELECT emp_id FROM emp")}
            refs = {r for (r,) in conn.execute("SELECT emp_ref FROM review")}
        assert refs <= employees | {None}
        assert refs


def test_invalid_foreign_key_declarations_are_reported_and_exempted(tmp_path: Path) -> None:
    db = build_database("fk_invalid.sql", tmp_path)
    profile = read_fuzz_profile(db)
    report = fuzz_database(profile, {}, "3", tmp_path / "f.sqlite")
    assert list(report.invalid_foreign_keys) == ["vote"]
    assert "foreign key mismatch" in report.invalid_foreign_keys["vote"]
    with sqlite3.connect(tmp_path / "f.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        # The children still draw from the parent's values, so joins on the column find rows.
        states = {s for (s,) in conn.execute("SELECT state FROM area")}
        assert {s for (s,) in conn.execute("SELECT state FROM vote")} <= states
