"""SQLite's verdict against a schema: the compiled schema is kept for the process and lent to one thread at
a time, so a thread that lives for one batch (the coalescer's player) finds it compiled by an earlier one,
and threads judging at once each get their own connection and their own verdict."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from progress_sql.sql import verdict

SCHEMA = {"singer": ("singer_id", "name", "age"), "concert": ("concert_id", "singer_id")}
CASES = {
    "SELECT name FROM singer WHERE age > 30": None,
    "SELECT FROM singer": 'SQLite: near "FROM": syntax error',
    "SELECT nickname FROM singer": "SQLite: no such column: nickname",
    "SELECT * FROM concert JOIN singer USING (singer_id)": None,
    "SELECT 1; SELECT 2": "SQLite: You can only execute one statement at a time.",
}


@pytest.fixture
def compilations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The schemas compiled (their ids), with the process's kept connections emptied first."""
    monkeypatch.setattr(verdict, "_LENDING", verdict._Lending())
    made: list[int] = []
    real = verdict._compiled

    def counting(tables: verdict.TableColumns) -> object:
        made.append(id(tables))
        return real(tables)

    monkeypatch.setattr(verdict, "_compiled", counting)
    return made


def test_a_thread_that_lives_for_one_call_finds_the_schema_compiled(compilations: list[int]) -> None:
    for sql, expected in CASES.items():
        seen: list[str | None] = []
        thread = threading.Thread(target=lambda sql=sql, seen=seen: seen.append(verdict.sqlite_rejection(sql, SCHEMA)))
        thread.start()
        thread.join()
        assert seen == [expected], sql
    assert compilations == [id(SCHEMA)]


def test_threads_judging_at_once_each_get_their_own_verdict(compilations: list[int]) -> None:
    work = list(CASES.items()) * 40

    def judge(case: tuple[str, str | None]) -> tuple[str | None, str | None]:
        return verdict.sqlite_rejection(case[0], SCHEMA), case[1]

    with ThreadPoolExecutor(8) as threads:
        outcomes = list(threads.map(judge, work))
    assert all(got == expected for got, expected in outcomes)
    assert 1 <= len(compilations) <= 8  # at most one connection per thread judging at once, then reused


def test_the_kept_schemas_are_bounded(compilations: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verdict, "MAX_CACHED_SCHEMAS", 2)
    schemas = [{f"t{n}": ("a",)} for n in range(3)]
    for schema in schemas:
        assert verdict.sqlite_rejection(f"SELECT a FROM t{schemas.index(schema)}", schema) is None
    assert verdict.sqlite_rejection("SELECT a FROM t2", schemas[2]) is None  # kept: the most recent
    assert verdict.sqlite_rejection("SELECT a FROM t0", schemas[0]) is None  # dropped: compiled again
    assert compilations == [id(s) for s in schemas] + [id(schemas[0])]
