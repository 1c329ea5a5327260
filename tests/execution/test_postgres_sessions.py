"""PostgreSQL as a shared database (a real throw-away server): a query of the reader role cannot reach
the role's other sessions (terminate, cancel, their query text), write WAL, create large objects or
hold advisory locks; each query's settings end with it; a connection terminated from outside is rerun
once and never kept; and an `eval` run beside one that sends those attacks as predictions gives the
records of a clean run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.tasks import load_task
from progress_sql.execution.engines import locate
from progress_sql.execution.engines.postgres import PostgresRunner, split_location
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.port import port_database, reader_location, unhardened_functions
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore, gold_results

psycopg = pytest.importorskip("psycopg", reason="needs the [engines] extra (scripts/test.sh installs it)")

LIMITS = ExecLimits(timeout_s=5.0, memory_bytes=256 * 2**20)


@pytest.fixture(scope="module")
def server(music_dir: Path, pg_admin: str) -> dict[str, Any]:
    source = music_dir / "database" / "music" / "music.sqlite"
    port_database(source, pg_admin, "music")
    return {"admin": split_location(pg_admin)[0], "music": locate(reader_location(pg_admin), "music", str(source))}


def _admin(server: dict[str, Any]) -> Any:
    return psycopg.connect(server["admin"], autocommit=True)


def _pid(runner: PostgresRunner, location: str) -> int:
    result = runner.run(location, "SELECT pg_backend_pid()", LIMITS)
    assert result.status == "ok", result.error
    return int(result.rows[0][0])


def test_port_db_leaves_the_reader_no_server_reaching_function(server: dict[str, Any]) -> None:
    with _admin(server) as conn:
        assert unhardened_functions(conn) == []


def test_a_query_cannot_terminate_or_cancel_another_session(server: dict[str, Any]) -> None:
    victim, attacker = PostgresRunner(), PostgresRunner()
    try:
        pid = _pid(victim, server["music"])
        for call in ("pg_terminate_backend", "pg_cancel_backend"):
            attack = attacker.run(server["music"], f"SELECT {call}({pid})", LIMITS)
            assert attack.status == "error", (call, attack)
            assert "permission denied" in (attack.error or ""), (call, attack)
        listed = attacker.run(server["music"], "SELECT count(query) FROM pg_stat_activity", LIMITS)
        assert listed.status == "error", "the other sessions' query text is readable"
        assert _pid(victim, server["music"]) == pid  # the same backend, unharmed
    finally:
        victim.close()
        attacker.close()


def test_a_query_writes_no_wal(server: dict[str, Any]) -> None:
    runner = PostgresRunner()
    try:
        with _admin(server) as conn:
            start = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
            sql = "SELECT count(pg_logical_emit_message(false, 'p', repeat('x', 1000000))) FROM generate_series(1, 50)"
            result = runner.run(server["music"], sql, LIMITS)
            grown = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (start,)).fetchone()[0]
    finally:
        runner.close()
    assert result.status == "error"
    assert "permission denied" in (result.error or "")
    assert grown < 4 * 2**20  # unrefused, the statement writes 50 MB


def test_no_large_object_is_created_even_in_a_committed_read_only_transaction(server: dict[str, Any]) -> None:
    runner = PostgresRunner()
    try:
        through_runner = runner.run(server["music"], "SELECT lo_from_bytea(0, 'x')", LIMITS)
    finally:
        runner.close()
    assert through_runner.status == "error"
    reader = split_location(server["music"])[0]
    with psycopg.connect(reader, autocommit=True) as conn:
        conn.execute("BEGIN READ ONLY")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT lo_from_bytea(0, 'x')")
        conn.execute("ROLLBACK")
    with _admin(server) as conn:
        assert conn.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone()[0] == 0


def test_nothing_a_query_sets_outlives_it(server: dict[str, Any]) -> None:
    runner = PostgresRunner()
    try:
        pid = _pid(runner, server["music"])
        changed = runner.run(
            server["music"],
            "SELECT set_config('search_path', 'pg_catalog', false), set_config('work_mem', '1GB', false),"
            " set_config('default_transaction_read_only', 'off', false)",
            LIMITS,
        )
        assert changed.status == "ok", changed.error
        locked = runner.run(server["music"], "SELECT pg_advisory_lock(7)", LIMITS)
        assert locked.status == "error"
        after = runner.run(
            server["music"],
            "SELECT current_setting('search_path'), current_setting('work_mem'),"
            " current_setting('transaction_read_only'), pg_backend_pid(), count(*) FROM singer",
            LIMITS,
        )
    finally:
        runner.close()
    assert after.status == "ok", after.error
    assert after.rows[0][:4] == ("music", "16MB", "on", pid)  # work_mem: memory_bytes / 16, SET LOCAL
    with _admin(server) as conn:
        assert conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()[0] == 0


def test_a_connection_terminated_from_outside_is_rerun_and_never_kept(server: dict[str, Any], music_dir: Path) -> None:
    gold = "SELECT count(*) FROM singer"
    with ExecutionPool(workers=1) as pool:
        warm = pool.run(ExecJob(server["music"], gold, LIMITS))  # the worker now holds a connection
        assert warm.status == "ok"
        with _admin(server) as conn:  # an administrator (or a server restart) ends every reader session
            ended = conn.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'progress-sql'"
            ).fetchone()[0]
        assert ended >= 1
        example = load_task(str(music_dir / "questions.json"), music_dir)[0]
        cache = GoldCache()
        backend = reader_location(server["admin"])
        (results,) = gold_results([example], get_preset("spider"), pool, limits=LIMITS, cache=cache, backend_db=backend)
        assert [r.status for r in results] == ["ok"], results  # rerun on a fresh connection
    # A failure from outside that persists (here: the schema is not there yet) is not kept by the store.
    later = replace(load_task(str(music_dir / "questions.json"), music_dir)[0], db_id="music_later")
    store = GoldStore(get_preset("spider"), backend_db=backend, limits=LIMITS)
    try:
        first = store.prepare(later)
        assert first.error is not None
        assert first.results[0].failed_outside
        port_database(music_dir / "database" / "music" / "music.sqlite", server["admin"], "music_later")
        assert store.prepare(later).error is None  # prepared again, not served from the store
    finally:
        store.close()


# ---- two eval runs on one server, one of them attacking ---------------------------------------------

ATTACKS = [
    # the reader role's other sessions: other workers of this run and of every other run
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()",
    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()",
    "SELECT lo_from_bytea(0, 'x')",
    "SELECT pg_sleep(0.2)",  # keeps the attacking run alive while the other runs
]
VOLATILE = {"elapsed_s", "seconds", "latency_s", "time_s"}


def _eval(task: Path, data_dir: Path, predictions: Path, out: Path, backend: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "progress_sql", "eval", "--task", str(task), "--data-dir", str(data_dir),
               "--predictions", str(predictions), "--out", str(out), "--backend-db", backend, "--workers", "2",
               "--no-plots"]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))


def _records(out: Path) -> list[dict[str, Any]]:
    def stable(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [stable(v) for v in value]
        return value

    return [
        stable(json.loads(line)) for line in (out / "samples.jsonl").read_text(encoding="utf-8").split("\n") if line
    ]


def _wait_for_queries(server: dict[str, Any], run: subprocess.Popen[str]) -> None:
    """Return once a session of the reader runs on the server (the run sends queries)."""
    with _admin(server) as conn:
        while run.poll() is None:
            found = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'progress-sql'")
            if found.fetchone()[0]:
                return
            time.sleep(0.05)
    raise AssertionError("the attacking run ended before it sent a query")


def test_an_attacking_run_leaves_a_run_beside_it_as_a_clean_run(
    server: dict[str, Any], music_dir: Path, tmp_path: Path
) -> None:
    questions = json.loads((music_dir / "questions.json").read_text(encoding="utf-8"))
    # The clean run: the golds and slow answers (a tenth of a second each), all distinct (a run executes
    # each distinct answer once), so that its workers hold their connections for a few seconds.
    many = [questions[i % len(questions)] for i in range(60)]
    answers = [q["query"] if i % 2 else f"SELECT count(*), {i} FROM singer, pg_sleep(0.1)" for i, q in enumerate(many)]
    clean_task = tmp_path / "clean.json"
    clean_task.write_text(json.dumps(many), encoding="utf-8")
    clean_predictions = tmp_path / "clean.jsonl"
    clean_predictions.write_text("".join(json.dumps({"sql": f"{a} /* {i} */"}) + "\n" for i, a in enumerate(answers)))
    attack_task = tmp_path / "attack.json"
    attack_task.write_text(json.dumps([questions[0]] * 300), encoding="utf-8")
    attack_predictions = tmp_path / "attack.jsonl"
    attack_predictions.write_text(
        "".join(json.dumps({"sql": f"{ATTACKS[i % len(ATTACKS)]} /* {i} */"}) + "\n" for i in range(300))
    )
    backend = reader_location(server["admin"])

    alone = _eval(clean_task, music_dir, clean_predictions, tmp_path / "alone", backend)
    assert alone.wait(timeout=300) == 0, alone.stdout.read() if alone.stdout else ""
    attacker = _eval(attack_task, music_dir, attack_predictions, tmp_path / "attacker", backend)
    _wait_for_queries(server, attacker)  # the attack is under way
    beside = _eval(clean_task, music_dir, clean_predictions, tmp_path / "beside", backend)
    try:
        assert beside.wait(timeout=300) == 0, beside.stdout.read() if beside.stdout else ""
        assert attacker.poll() is None, "the attacking run ended before the other one: no overlap was tested"
    finally:
        attacker.wait(timeout=300)
    assert _records(tmp_path / "beside") == _records(tmp_path / "alone")


def test_the_reader_reads_another_ported_database_of_the_same_server(
    server: dict[str, Any], music_dir: Path, pg_admin: str
) -> None:
    """What docs/semantics.md says the server is trusted for: one reader serves every schema of the
    benchmark database, so a query of one task reads another ported database's tables (benchmark data;
    gold SQL is never stored on the server). A role per database would separate them."""
    source = music_dir / "database" / "music" / "music.sqlite"
    port_database(source, pg_admin, "music_other")
    result = PostgresRunner().run(server["music"], "SELECT count(*) FROM music_other.singer", LIMITS)
    assert result.status == "ok", result.error
    assert result.rows[0][0] > 0
