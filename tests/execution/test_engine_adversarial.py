"""The hostile corpus (tests/execution/hostile/: writes, files, network, session, resources, leaks)
run through the execution pool on SQLite, DuckDB and a real PostgreSQL server, as eval runs queries.
Per engine: every statement ends with its expected status within its deadline plus one second; the
database is unchanged (SQLite and DuckDB file digests, PostgreSQL's schema digest); no file appears
outside it and no temporary file is left; PostgreSQL writes no more than a bounded amount of WAL; no
worker process (and no PostgreSQL backend) passes the memory cap stated here."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import tomllib

from progress_sql.execution.engines import locate
from progress_sql.execution.engines.postgres import schema_digest, split_location
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.port import port_database, reader_location

pytest.importorskip("duckdb", reason="needs the [engines] extra (scripts/test.sh installs it)")

CORPUS = Path(__file__).parent / "hostile"
ENGINES = ("sqlite", "duckdb", "postgresql")
INTENTS = ("write", "file", "network", "session", "resource", "leak", "ordinary")
DEADLINE_S = 1.0
MEMORY = 256 * 2**20
LIMITS = ExecLimits(timeout_s=DEADLINE_S, max_bytes=16 * 2**20, memory_bytes=MEMORY)
#: The worker's address-space cap: a query that got past the engine's own limits would kill its
#: worker (a "worker process died" error), which no statement may do.
WORKER_MEMORY = 2 * 2**30
#: Peak resident memory a worker, or a PostgreSQL backend, may reach on the corpus. A backend's own
#: bound is PostgreSQL's: one value is at most 1 GB (repeat('x', 10^9) builds one), work_mem per sort.
PEAK_MEMORY = 1536 * 2**20
#: WAL the whole corpus may make PostgreSQL write (the server's own bookkeeping; one unrefused
#: pg_logical_emit_message statement writes gigabytes).
WAL_BOUND = 16 * 2**20
_PLACEHOLDER = re.compile(r"\{(nested|case):(\d+)\}")


@dataclass(frozen=True, slots=True)
class Statement:
    intent: str
    name: str
    sql: str
    expect: frozenset[str]
    truncated: bool | None


def corpus(engine: str) -> list[Statement]:
    """The statements every engine shares and ``engine``'s own, in the corpus files' order."""
    statements = []
    for file in ("common", engine):
        groups = tomllib.loads((CORPUS / f"{file}.toml").read_text(encoding="utf-8"))
        assert set(groups) <= set(INTENTS), f"{file}.toml: unknown intents {set(groups) - set(INTENTS)}"
        for intent, entries in groups.items():
            statements += [
                Statement(intent, e["name"], e["sql"], frozenset(e["expect"].split("|")), e.get("truncated"))
                for e in entries
            ]
    return statements


def expand(sql: str, outside: Path) -> str:
    """The statement's text: ``{out}`` a folder outside the database, ``{nested:N}`` N nested
    subqueries, ``{case:N}`` N nested CASE expressions."""

    def nest(match: re.Match[str]) -> str:
        depth = int(match.group(2))
        if match.group(1) == "nested":
            return "(SELECT " * depth + "1" + ")" * depth
        return "CASE WHEN n > 0 THEN " * depth + "1" + " ELSE 0 END" * depth + " FROM big"

    return _PLACEHOLDER.sub(nest, sql.replace("{out}", str(outside)))


def peak_rss(pid: int) -> int:
    """The peak resident memory of a live process (bytes), 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else 0


def _tree_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
    }


class PostgresServer:
    """What the admin sees of the server: the schema's digest, the WAL position, leftover temporary
    files, and the peak memory of the reader's backends (the server runs on this machine)."""

    def __init__(self, admin: str, schema: str) -> None:
        import psycopg

        self.conn = psycopg.connect(split_location(admin)[0], autocommit=True)
        self.schema = schema
        self._lock = threading.Lock()

    def digest(self) -> str:
        with self._lock:
            return schema_digest(self.conn, self.schema)

    def wal(self) -> str:
        with self._lock:
            return str(self.conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0])

    def wal_since(self, lsn: str) -> int:
        with self._lock:
            return int(self.conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,)).fetchone()[0])

    def temp_files(self) -> list[str]:
        """Temporary files left once the reader's sessions have ended (a backend whose worker was killed
        finds out at its next check and removes its files as it exits; at most 30 s here)."""
        with self._lock:
            for _ in range(300):
                alive = self.conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'progress-sql'"
                )
                if alive.fetchone()[0] == 0:
                    break
                time.sleep(0.1)
            return [row[0] for row in self.conn.execute("SELECT name FROM pg_ls_tmpdir()")]

    def backends_peak(self) -> int:
        with self._lock:
            pids = self.conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'progress-sql'"
            ).fetchall()
        return max((peak_rss(pid) for (pid,) in pids), default=0)


@pytest.fixture(scope="module")
def targets(make_database: Any, pg_admin: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("engine_adversarial")
    source: Path = make_database("adversarial.sql", root)
    duck = root / "duck"
    port_database(source, pg_admin, "adversarial")
    port_database(source, f"duckdb:{duck}", "adversarial")
    outside = root / "outside"
    outside.mkdir()
    return {
        "sqlite": (str(source), source.parent),
        "duckdb": (locate(f"duckdb:{duck}", "adversarial", str(source)), duck),
        "postgresql": (locate(reader_location(pg_admin), "adversarial", str(source)), None),
        "outside": outside,
        "admin": pg_admin,
    }


@pytest.fixture(scope="module", params=ENGINES)
def outcome(request: pytest.FixtureRequest, targets: dict[str, Any]) -> dict[str, Any]:
    engine: str = request.param
    location, folder = targets[engine]
    outside: Path = targets["outside"]
    statements = corpus(engine)
    server = PostgresServer(targets["admin"], "adversarial") if engine == "postgresql" else None
    before = server.digest() if server else _tree_digest(folder)
    wal_start = server.wal() if server else ""
    files_before = _tree_digest(outside)
    jobs = [ExecJob(location, expand(s.sql, outside), LIMITS) for s in statements]
    started: dict[int, float] = {}
    finished: dict[int, float] = {}
    workers: dict[int, int] = {}
    peaks: dict[str, int] = {}

    def on_start(index: int, pid: int) -> None:
        started.setdefault(index, time.monotonic())  # a rerun counts from the first start
        workers[index] = pid

    def on_result(index: int, _result: Any) -> None:
        finished[index] = time.monotonic()
        peaks[statements[index].name] = max(
            peak_rss(workers[index]), server.backends_peak() if server else 0
        )  # after each statement: a worker or backend replaced later has been measured

    # A kill margin of half a second: a query the engine itself cannot stop in time (DuckDB checks for
    # interrupts between vectors, not inside one huge repeat()) is killed with its worker and still
    # ends within the deadline plus one second.
    with ExecutionPool(workers=2, memory_bytes=WORKER_MEMORY, kill_margin_s=0.5) as pool:
        # started and connected before the clock runs: the deadline bounds the statements, not start-up
        pool.run_many([ExecJob(location, "SELECT count(*) FROM person", LIMITS) for _ in range(8)])
        results = pool.run_many(jobs, on_start=on_start, on_result=on_result)
    after = server.digest() if server else _tree_digest(folder)
    return {
        "engine": engine,
        "statements": statements,
        "results": results,
        "seconds": [finished[i] - started[i] for i in range(len(statements))],
        "unchanged": before == after,
        "files_unchanged": files_before == _tree_digest(outside),
        "temp_files": server.temp_files() if server else [],
        "wal_bytes": server.wal_since(wal_start) if server else 0,
        "peaks": peaks,
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_the_corpus_covers_every_intent_with_unique_names(engine: str) -> None:
    statements = corpus(engine)
    names = [s.name for s in statements]
    assert len(set(names)) == len(names)
    assert {s.intent for s in statements} == set(INTENTS)
    assert all(s.expect <= {"ok", "error", "timeout"} for s in statements)


def test_every_statement_ends_with_its_expected_status(outcome: dict[str, Any]) -> None:
    wrong = [
        (s.name, result.status, result.error)
        for s, result in zip(outcome["statements"], outcome["results"], strict=True)
        if result.status not in s.expect
    ]
    assert wrong == []


def test_caps_truncate_and_plain_queries_answer(outcome: dict[str, Any]) -> None:
    for s, result in zip(outcome["statements"], outcome["results"], strict=True):
        if s.truncated is not None and result.status == "ok":
            assert result.truncated is s.truncated, s.name
    plain = dict(zip([s.name for s in outcome["statements"]], outcome["results"], strict=True))["plain-select"]
    assert plain.rows == (("Ada",), ("Grace",), ("Alan",))


def test_nothing_changes_in_the_database_or_on_disk(outcome: dict[str, Any]) -> None:
    assert outcome["unchanged"]
    assert outcome["files_unchanged"]
    assert outcome["temp_files"] == []
    assert outcome["wal_bytes"] < WAL_BOUND


def test_every_statement_ends_within_its_deadline_plus_one_second(outcome: dict[str, Any]) -> None:
    late = [
        (s.name, round(seconds, 2))
        for s, seconds in zip(outcome["statements"], outcome["seconds"], strict=True)
        if seconds > DEADLINE_S + 1.0
    ]
    assert late == []


def test_memory_stays_under_the_cap(outcome: dict[str, Any]) -> None:
    # The engine's own limit (SQLite's heap limit, DuckDB's memory_limit, PostgreSQL's work_mem and
    # temp_file_limit) ends a bomb as an error or a timeout: no worker reached its address-space cap
    # and died, and no worker or backend measured after a statement passed the peak cap.
    died = [
        s.name
        for s, r in zip(outcome["statements"], outcome["results"], strict=True)
        if "worker process died" in (r.error or "")
    ]
    assert died == []
    over = {name: peak for name, peak in outcome["peaks"].items() if peak > PEAK_MEMORY}
    assert over == {}
