"""Write tasks on disposable copies: hostile scripts never touch the original file, each ends within
its deadline plus a second, and each is scored in one batch; an episode through the environment."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from progress_sql.data.embedded import embedded_databases
from progress_sql.env import EnvConfig
from progress_sql.env.core import SQLRefineEnv, make_store
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.write import WriteResult, run_write, split_statements, write_job
from progress_sql.judge.write import judge_write
from progress_sql.types import Example, WriteCheck, WriteSpec

TIMEOUT_S = 1.0
BIG_ROWS = 50_000
SPEC = WriteSpec(
    ("singer", "big"),
    (WriteCheck("french ages", "SELECT name, age FROM singer WHERE country = 'France'"),
     WriteCheck("big rows", "SELECT count(*) FROM big")),
    ("update", "delete", "insert"),
    compare_tables=("singer",),
)  # fmt: skip
REFERENCE = "UPDATE singer SET age = age + 1 WHERE country = 'France'"
HOSTILE = {
    "drop": "DROP TABLE singer",
    "ddl": "CREATE TABLE stolen AS SELECT * FROM singer",
    "ddl after a write": "UPDATE singer SET age = 1 WHERE singer_id = 1; ALTER TABLE singer ADD COLUMN x",
    "attach": "ATTACH DATABASE 'elsewhere.sqlite' AS other",
    "pragma": "PRAGMA writable_schema = ON",
    "vacuum": "VACUUM",
    "transaction": "BEGIN; DELETE FROM singer; COMMIT",
    "table not allowed": "DELETE FROM concert",
    "table not allowed in a CTE": "WITH x AS (SELECT 1) DELETE FROM stadium",
    "delete without where on a large table": "DELETE FROM big",
    "recursive insert": "INSERT INTO big (n) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT x FROM c",
    "recursive insert within the row cap, slow": "INSERT INTO singer (name) WITH RECURSIVE c(x) AS "
    "(SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT 'n' || x FROM c WHERE x < 0",
    "memory bomb": "UPDATE singer SET name = randomblob(2000000000)",
    "trigger": "CREATE TRIGGER t AFTER UPDATE ON singer BEGIN DELETE FROM concert; END",
    "file functions": "UPDATE singer SET name = readfile('/etc/passwd')",
    "empty": "   ;  ",
}


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """concert_singer with a large extra table (the copy of a big file goes through a temporary file)."""
    path = tmp_path_factory.mktemp("write") / "concert_singer.sqlite"
    shutil.copyfile(embedded_databases()["concert_singer"], path)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE big (n INTEGER, pad TEXT)")
        conn.executemany("INSERT INTO big VALUES (?, ?)", ((i, "x" * 40) for i in range(BIG_ROWS)))
    conn.close()
    return path


def digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_hostile_scripts_are_scored_and_never_touch_the_original(database: Path) -> None:
    before = digest(database)
    limits = ExecLimits(timeout_s=TIMEOUT_S, max_rows=10_000)
    reference = run_write(write_job(str(database), REFERENCE, SPEC, limits))
    assert reference.status == "ok"
    names = list(HOSTILE)
    with ExecutionPool(workers=2) as pool:
        results = pool.run_many([write_job(str(database), HOSTILE[n], SPEC, limits) for n in names])
    for name, result in zip(names, results, strict=True):
        verdict = judge_write(SPEC, reference, result)
        assert not verdict.verdict.match, name
        assert verdict.verdict.status in ("pred_error", "pred_timeout", "mismatch"), name
        assert result.elapsed_s <= TIMEOUT_S + 1.0, f"{name}: {result.elapsed_s:.2f} s"  # the bound
    by_name = dict(zip(names, results, strict=True))
    assert by_name["recursive insert"].status in ("timeout", "error")
    assert "more than 10000 rows" in (by_name["delete without where on a large table"].error or "")
    assert "allows only" in (by_name["table not allowed"].error or "")
    assert "found DROP" in (by_name["drop"].error or "")
    assert digest(database) == before  # the original's bytes (and its modification time) never change


def test_the_reference_passes_and_a_wrong_where_fails_a_check(database: Path) -> None:
    reference = run_write(write_job(str(database), REFERENCE, SPEC))
    assert isinstance(reference, WriteResult)
    assert judge_write(SPEC, reference, reference).verdict.match
    wrong = run_write(write_job(str(database), "UPDATE singer SET age = age + 1 WHERE age > 30", SPEC))
    verdict = judge_write(SPEC, reference, wrong)
    assert (verdict.passed, verdict.total) == (1, 3)
    assert verdict.failed == ("french ages", "table singer")


def test_statements_split_at_semicolons_outside_strings_and_comments() -> None:
    script = "UPDATE t SET a = ';' -- ; here\n WHERE b = 1; /* ; */ DELETE FROM t;"
    assert split_statements(script) == ["UPDATE t SET a = ';' -- ; here\n WHERE b = 1;", "/* ; */ DELETE FROM t;"]


def test_a_write_episode_through_the_environment(database: Path) -> None:
    example = Example(
        0, "Make the French singers a year older.", "concert_singer", str(database), REFERENCE, write=SPEC
    )
    config = EnvConfig(max_turns=2, timeout_s=5.0)
    with make_store(config) as store, SQLRefineEnv(config, store=store) as env:
        messages = env.reset(example)
        assert "Task: change the database" in messages[1]["content"]
        first = env.step("<think>all of them</think><sql>UPDATE singer SET age = age + 1</sql>")
        assert not first.info.match
        assert (first.info.checks_passed, first.info.checks_total) == (2, 3)  # the table check fails
        assert "DML_WHERE_MISSING" in first.info.tags
        assert first.observation is not None
        second = env.step(f"<think>only France</think><sql>{REFERENCE}</sql>")
        assert second.terminated
        assert second.info.match
        reward = second.info.reward
        assert reward is not None
        assert reward.component("checks") == 0.5  # omega_checks times every check passed
        assert reward.component("late") > 0  # the progressive reward, unchanged, sees the match
