"""The SQLite executor's adversarial suite rewritten for PostgreSQL (a real server) and DuckDB: writes,
DDL, session settings, extension loading, file access, cartesian blow-ups, recursive CTEs, huge
strings. Nothing changes in any database (content digests before and after), every query ends within
its deadline plus one second, and memory stays under the configured cap."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from progress_sql.execution.engines import engine_of, locate
from progress_sql.execution.engines.postgres import schema_digest, split_location
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.port import port_database, reader_location

pytest.importorskip("duckdb", reason="needs the [engines] extra (scripts/test.sh installs it)")

DEADLINE_S = 1.0
MEMORY = 256 * 2**20
LIMITS = ExecLimits(timeout_s=DEADLINE_S, max_bytes=16 * 2**20, memory_bytes=MEMORY)
#: The worker's address-space cap: a query that got past the engine's own memory limit would kill
#: its worker (an "worker process died" error), which no case may do.
WORKER_MEMORY = 2 * 2**30
ERROR = frozenset({"error"})
TIMEOUT = frozenset({"timeout"})
BOMB = frozenset({"error", "timeout"})
OK = frozenset({"ok"})
CYCLE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"

# (name, SQL with {out} for a path outside the database, expected statuses, truncated), both engines
COMMON: list[tuple[str, str, frozenset[str], bool | None]] = [
    ("insert", "INSERT INTO person VALUES (9, 'Eve', 1)", ERROR, None),
    ("update", "UPDATE person SET age = 0", ERROR, None),
    ("delete", "DELETE FROM person", ERROR, None),
    ("drop-table", "DROP TABLE person", ERROR, None),
    ("create-table", "CREATE TABLE x (a INT)", ERROR, None),
    ("create-temp-table", "CREATE TEMP TABLE x AS SELECT * FROM person", ERROR, None),
    ("create-view", "CREATE VIEW v AS SELECT 1", ERROR, None),
    ("alter", "ALTER TABLE person ADD COLUMN z INT", ERROR, None),
    ("cte-delete", "WITH x AS (DELETE FROM person RETURNING *) SELECT * FROM x", ERROR, None),
    ("cte-insert", "WITH x AS (SELECT 1) INSERT INTO person SELECT 9, 'z', 1 FROM x", ERROR, None),
    ("comment-then-delete", "/* hi */ -- there\n DELETE FROM person", ERROR, None),
    ("select-then-drop", "SELECT 1; DROP TABLE person", ERROR, None),
    ("two-selects", "SELECT 1; SELECT 2", ERROR, None),
    ("nul-in-sql", "SELECT 1\x00; DROP TABLE person", ERROR, None),
    ("begin", "BEGIN", ERROR, None),
    ("set", "SET work_mem = '4GB'", ERROR, None),
    ("copy-out", "COPY person TO '{out}/person.csv'", ERROR, None),
    ("attach", "ATTACH '{out}/x.duckdb' AS x", ERROR, None),
    ("install-extension", "INSTALL httpfs", ERROR, None),
    ("load-extension", "LOAD httpfs", ERROR, None),
    ("empty", "   ", ERROR, None),
    ("syntax", "SELEC name FROM person", ERROR, None),
    ("no-such-table", "SELECT * FROM nobody", ERROR, None),
    ("unbounded-recursive-cte", f"{CYCLE} SELECT count(*) FROM c", TIMEOUT, None),
    ("six-way-cartesian", "SELECT count(*) FROM big a, big b, big c, big d, big e, big f", TIMEOUT, None),
    (
        "doubling-string-bomb",
        "WITH RECURSIVE d(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM d) SELECT length(s) FROM d",
        BOMB,
        None,
    ),
    ("repeat-bomb", "SELECT length(repeat('x', 1000000000))", BOMB, None),
    ("sort-bomb", "SELECT a.s || b.s || c.s AS t FROM big a, big b, big c ORDER BY t DESC LIMIT 1", BOMB, None),
    # DuckDB builds a result before the first fetch: on a loaded machine a million rows may not be
    # ready within the second (a timeout); when it answers, the row cap has cut it.
    ("a-million-rows", "SELECT a.n, b.n FROM big a, big b", OK | TIMEOUT, True),
    ("wide-rows-byte-cap", "SELECT a.s, b.s, repeat('x', 100000) FROM big a, big b", OK, True),
    ("plain-select", "SELECT name FROM person ORDER BY id", OK, False),
]
ENGINE_CASES: dict[str, list[tuple[str, str, frozenset[str], bool | None]]] = {
    "postgresql": [
        ("set-config-session", "SELECT set_config('default_transaction_read_only', 'off', false)", OK, False),
        ("read-only-after-set-config", "SELECT current_setting('default_transaction_read_only')", OK, False),
        ("set-config-timeout", "SELECT set_config('statement_timeout', '0', false), pg_sleep(5)", TIMEOUT, None),
        ("pg-sleep", "SELECT pg_sleep(30)", TIMEOUT, None),
        ("read-file", "SELECT pg_read_file('/etc/passwd')", ERROR, None),
        ("lo-import", "SELECT lo_import('/etc/passwd')", ERROR, None),
        ("dblink", "CREATE EXTENSION dblink", ERROR, None),
        ("copy-program", "COPY person TO PROGRAM 'touch {out}/owned'", ERROR, None),
        ("select-for-update", "SELECT * FROM person FOR UPDATE", ERROR, None),
        ("nextval", "SELECT nextval('person_seq')", ERROR, None),
        ("other-schema", "SELECT * FROM pg_catalog.pg_authid", ERROR, None),
    ],
    "duckdb": [
        ("read-csv", "SELECT * FROM read_csv('/etc/passwd')", ERROR, None),
        ("read-text", "SELECT * FROM read_text('/etc/passwd')", ERROR, None),
        ("glob-files", "SELECT * FROM glob('/etc/*')", ERROR, None),
        ("write-parquet", "COPY (SELECT 1) TO '{out}/x.parquet'", ERROR, None),
        ("pragma", "PRAGMA memory_limit = '64GB'", ERROR, None),
        ("set-config", "SET threads = 64", ERROR, None),
        ("checkpoint", "CHECKPOINT", ERROR, None),
        ("export-database", "EXPORT DATABASE '{out}/dump'", ERROR, None),
    ],
}


def _database_digest(location: str, admin: str) -> str:
    if engine_of(location).name == "duckdb":
        return engine_of(location).content_identity(location)
    import psycopg

    with psycopg.connect(split_location(admin)[0], autocommit=True) as conn:
        return schema_digest(conn, split_location(location)[1] or "public")


@pytest.fixture(scope="module")
def targets(make_database: Any, pg_admin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("engine_adversarial")
    source: Path = make_database("adversarial.sql", root)
    duck = f"duckdb:{root / 'duck'}"
    port_database(source, pg_admin, "adversarial")
    port_database(source, duck, "adversarial")
    outside = root / "outside"
    outside.mkdir()
    return {
        "postgresql": locate(reader_location(pg_admin), "adversarial", str(source)),
        "duckdb": locate(duck, "adversarial", str(source)),
        "outside": outside,
        "admin": pg_admin,
    }


@pytest.fixture(scope="module", params=["postgresql", "duckdb"])
def outcome(request: pytest.FixtureRequest, targets: dict[str, Any]) -> dict[str, Any]:
    engine: str = request.param
    location = targets[engine]
    cases = COMMON + ENGINE_CASES[engine]
    before = _database_digest(location, targets["admin"])
    files_before = sorted(p.name for p in targets["outside"].iterdir())
    jobs = [ExecJob(location, sql.replace("{out}", str(targets["outside"])), LIMITS) for _, sql, _, _ in cases]
    started: dict[int, float] = {}
    finished: dict[int, float] = {}
    # A kill margin of half a second: a query the engine itself cannot stop in time (DuckDB checks for
    # interrupts between vectors, not inside one huge repeat()) is killed with its worker and still
    # ends within the deadline plus one second.
    with ExecutionPool(workers=2, memory_bytes=WORKER_MEMORY, kill_margin_s=0.5) as pool:
        results = pool.run_many(
            jobs,
            on_start=lambda i, _pid: started.setdefault(i, time.monotonic()),
            on_result=lambda i, _r: finished.__setitem__(i, time.monotonic()),
        )
    return {
        "engine": engine,
        "cases": cases,
        "results": results,
        "seconds": [finished[i] - started[i] for i in range(len(cases))],
        "unchanged": before == _database_digest(location, targets["admin"]),
        "files_unchanged": files_before == sorted(p.name for p in targets["outside"].iterdir()),
    }


def test_every_case_ends_with_its_expected_status(outcome: dict[str, Any]) -> None:
    wrong = [
        (name, result.status, result.error)
        for (name, _, expected, _), result in zip(outcome["cases"], outcome["results"], strict=True)
        if result.status not in expected
    ]
    assert wrong == []


def test_caps_truncate_and_plain_queries_answer(outcome: dict[str, Any]) -> None:
    for (name, _, _, truncated), result in zip(outcome["cases"], outcome["results"], strict=True):
        if truncated is not None and result.status == "ok":
            assert result.truncated is truncated, name
    plain = dict(zip([c[0] for c in outcome["cases"]], outcome["results"], strict=True))["plain-select"]
    assert plain.rows == (("Ada",), ("Grace",), ("Alan",))


def test_nothing_changes_in_the_database_or_on_disk(outcome: dict[str, Any]) -> None:
    assert outcome["unchanged"]
    assert outcome["files_unchanged"]


def test_every_query_ends_within_its_deadline_plus_one_second(outcome: dict[str, Any]) -> None:
    late = [
        (c[0], round(s, 2)) for c, s in zip(outcome["cases"], outcome["seconds"], strict=True) if s > DEADLINE_S + 1.0
    ]
    assert late == []


def test_memory_stays_under_the_cap(outcome: dict[str, Any]) -> None:
    # The engine's own limit (DuckDB's memory_limit; PostgreSQL's work_mem / temp_file_limit on the
    # server) ends a bomb as an error or a timeout: no worker reached its address-space cap and died.
    died = [
        c[0]
        for c, r in zip(outcome["cases"], outcome["results"], strict=True)
        if "worker process died" in (r.error or "")
    ]
    assert died == []
