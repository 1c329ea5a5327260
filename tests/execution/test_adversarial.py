"""Adversarial SQL against the isolated executor: every case ends with its expected status, within
the deadline plus a generous margin, and no database file or named path is written."""

from __future__ import annotations

import hashlib
import resource
import time
from pathlib import Path
from typing import Any

import pytest

from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool

DEADLINE_S = 1.0
MARGIN_S = 5.0  # deadline + kill margin + worker restart, with room for a noisy machine
MEMORY_BOUND = 2 * 2**30  # the test process (and each worker) stays under this
LIMITS = ExecLimits(timeout_s=DEADLINE_S, max_bytes=16 * 2**20)

ERROR = frozenset({"error"})
TIMEOUT = frozenset({"timeout"})
BOMB = frozenset({"error", "timeout"})
#: SQLite may refuse to build an over-long string and answer NULL at once (whether it does depends on
#: the library build and the allocator), which defuses the bomb as well; test_defused_bombs_yield_null
#: checks that such an "ok" carries no value.
DEFUSED = BOMB | {"ok"}
OK = frozenset({"ok"})

CYCLE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c)"

# (name, SQL with {out} standing for a path outside the database folder, expected statuses, truncated)
CASES: list[tuple[str, str, frozenset[str], bool | None]] = [
    ("insert", "INSERT INTO person VALUES (9, 'Eve', 1)", ERROR, None),
    ("insert-select", "INSERT INTO person SELECT * FROM person", ERROR, None),
    ("update", "UPDATE person SET age = 0", ERROR, None),
    ("delete", "DELETE FROM person", ERROR, None),
    ("replace", "REPLACE INTO person VALUES (1, 'X', 0)", ERROR, None),
    ("upsert", "INSERT INTO person VALUES (1, 'X', 0) ON CONFLICT DO NOTHING", ERROR, None),
    ("drop-table", "DROP TABLE person", ERROR, None),
    ("drop-if-exists", "DROP TABLE IF EXISTS big", ERROR, None),
    ("create-table", "CREATE TABLE x (a)", ERROR, None),
    ("create-temp-table", "CREATE TEMP TABLE x AS SELECT * FROM person", ERROR, None),
    ("create-index", "CREATE INDEX i ON person(name)", ERROR, None),
    ("create-view", "CREATE VIEW v AS SELECT 1", ERROR, None),
    ("create-trigger", "CREATE TRIGGER tr AFTER INSERT ON person BEGIN SELECT 1; END", ERROR, None),
    ("alter-rename", "ALTER TABLE person RENAME TO people", ERROR, None),
    ("alter-add-column", "ALTER TABLE person ADD COLUMN z", ERROR, None),
    ("vacuum", "VACUUM", ERROR, None),
    ("vacuum-into", "VACUUM INTO '{out}/copy.sqlite'", ERROR, None),
    ("reindex", "REINDEX", ERROR, None),
    ("analyze", "ANALYZE", ERROR, None),
    ("begin", "BEGIN IMMEDIATE", ERROR, None),
    ("savepoint", "SAVEPOINT s", ERROR, None),
    ("cte-insert", "WITH x AS (SELECT 1) INSERT INTO person SELECT 9, 'z', 1 FROM x", ERROR, None),
    ("cte-delete", "WITH x AS (SELECT 1) DELETE FROM person", ERROR, None),
    ("comment-then-delete", "/* hi */ -- there\n DELETE FROM person", ERROR, None),
    ("parenthesized-delete", "(DELETE FROM person)", ERROR, None),
    ("attach", "ATTACH DATABASE '{out}/attached.sqlite' AS a", ERROR, None),
    ("attach-memory", "ATTACH ':memory:' AS m", ERROR, None),
    ("detach", "DETACH DATABASE main", ERROR, None),
    ("pragma-writable-schema", "PRAGMA writable_schema = ON", ERROR, None),
    ("pragma-query-only-off", "PRAGMA query_only = OFF", ERROR, None),
    ("pragma-journal-wal", "PRAGMA journal_mode = WAL", ERROR, None),
    ("load-extension", "SELECT load_extension('/tmp/evil')", ERROR, None),
    ("select-then-drop", "SELECT 1; DROP TABLE person", ERROR, None),
    ("two-selects", "SELECT 1; SELECT 2", ERROR, None),
    ("select-then-attach", "SELECT 1; ATTACH '{out}/x.sqlite' AS x", ERROR, None),
    ("nul-in-sql", "SELECT 1\x00; DROP TABLE person", ERROR, None),
    ("empty", "   ", ERROR, None),
    ("syntax", "SELEC name FROM person", ERROR, None),
    ("no-such-table", "SELECT * FROM nobody", ERROR, None),
    ("unbounded-recursive-cte", f"{CYCLE} SELECT count(*) FROM c", TIMEOUT, None),
    (
        "six-way-cartesian",
        "SELECT count(*) FROM big a, big b, big c, big d, big e, big f",
        TIMEOUT,
        None,
    ),
    (
        "like-pathological",
        "SELECT count(*) FROM big a, big b, big c "
        "WHERE a.s || b.s || c.s LIKE '%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%a%b'",
        TIMEOUT,
        None,
    ),
    (
        "like-pattern-from-data",
        "SELECT count(*) FROM big a, big b, big c WHERE a.s LIKE '%' || b.s || '%' || c.s || '%'",
        TIMEOUT,
        None,
    ),
    (
        "glob-pathological",
        "SELECT count(*) FROM big a, big b, big c WHERE a.s || b.s || c.s GLOB '*a*a*a*a*a*a*a*a*b'",
        TIMEOUT,
        None,
    ),
    ("randomblob-bomb", "SELECT randomblob(2000000000)", BOMB, None),
    ("zeroblob-bomb", "SELECT zeroblob(2000000000)", BOMB, None),
    ("printf-bomb", "SELECT length(printf('%.*c', 2000000000, 'x'))", DEFUSED, None),
    (
        "group-concat-bomb",
        f"{CYCLE} SELECT length(group_concat(randomblob(1000000))) FROM c",
        BOMB,
        None,
    ),
    (
        "doubling-string-bomb",
        "WITH RECURSIVE d(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM d) SELECT length(s) FROM d",
        BOMB,
        None,
    ),
    ("millions-of-rows", f"{CYCLE} SELECT x FROM c LIMIT 3000000", OK, True),
    ("wide-rows-byte-cap", "SELECT a.s, b.s, zeroblob(1000000) FROM big a, big b", OK, True),
    ("nul-bytes", "SELECT t, b FROM odd_text WHERE id = 1", OK, False),
    ("invalid-utf8", "SELECT t, b FROM odd_text WHERE id IN (2, 3)", OK, False),
    ("plain-select", "SELECT name FROM person ORDER BY id", OK, False),
    # Table-valued pragma functions need a schema write inside SQLite; the authorizer refuses them.
    ("pragma-function", "SELECT * FROM pragma_table_info('person')", ERROR, None),
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory, make_database: Any) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("adversarial")
    database: Path = make_database("adversarial.sql", root)
    outside = root / "outside"
    outside.mkdir()
    return database, outside


@pytest.fixture(scope="module")
def results(sandbox: tuple[Path, Path]) -> dict[str, tuple[str, bool, float, str | None, tuple[Any, ...]]]:
    database, outside = sandbox
    before = {p.name: _digest(p) for p in database.parent.iterdir()}
    jobs = [ExecJob(str(database), sql.replace("{out}", str(outside)), LIMITS) for _, sql, _, _ in CASES]
    started: dict[int, float] = {}
    finished: dict[int, float] = {}
    with ExecutionPool(workers=2, memory_bytes=MEMORY_BOUND) as pool:
        ran = pool.run_many(
            jobs,
            on_start=lambda i, _pid: started.setdefault(i, time.monotonic()),  # a rerun counts from the first start
            on_result=lambda i, _r: finished.__setitem__(i, time.monotonic()),
        )
    after = {p.name: _digest(p) for p in database.parent.iterdir()}
    assert after == before, "the database folder changed"
    assert list(outside.iterdir()) == [], "a statement created a file outside the database folder"
    return {
        name: (r.status, r.truncated, finished[i] - started[i], r.error, tuple(r.rows))
        for i, ((name, _, _, _), r) in enumerate(zip(CASES, ran, strict=True))
    }


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40
    assert len({name for name, *_ in CASES}) == len(CASES)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "expected", "truncated"), [(c[0], c[2], c[3]) for c in CASES])
def test_case_status(
    results: dict[str, tuple[str, bool, float, str | None, tuple[Any, ...]]],
    name: str,
    expected: frozenset[str],
    truncated: bool | None,
) -> None:
    status, was_truncated, seconds, error, _rows = results[name]
    assert status in expected, f"{name}: {status} ({error})"
    if truncated is not None:
        assert was_truncated is truncated
    # A bound, not a benchmark: the case must not outlive its deadline by more than the margin.
    assert seconds < DEADLINE_S + MARGIN_S, f"{name} took {seconds:.1f} s"


@pytest.mark.slow
def test_memory_stays_bounded(results: dict[str, tuple[str, bool, float, str | None]]) -> None:
    assert results  # the whole adversarial batch has run in this process and its workers
    own_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert own_kib * 1024 < MEMORY_BOUND
    assert children_kib * 1024 < MEMORY_BOUND


@pytest.mark.slow
def test_defused_bombs_yield_null(results: dict[str, tuple[str, bool, float, str | None, tuple[Any, ...]]]) -> None:
    for name, _sql, expected, _truncated in CASES:
        status, _, _, _, rows = results[name]
        if expected is DEFUSED and status == "ok":
            assert rows == ((None,),), f"{name}: an over-long string was built: {rows!r}"
