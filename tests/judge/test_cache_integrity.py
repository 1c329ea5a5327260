"""The gold cache trusts nothing it reads (issue 36): a damaged, edited or foreign entry is a miss and
its gold runs again, so a real ``eval`` over a damaged cache gives the clean run's records, twice; an
error the query did not cause (an outage, a terminated connection, as the real runners report them)
is never cached; stale temporary files are removed; a bad ``--cache-dir`` is one line and exit 2."""

from __future__ import annotations

import base64
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import (
    STALE_TEMPORARY_S,
    GoldCache,
    encode_entry,
    read_entry,
    remove_stale_temporaries,
)
from progress_sql.types import ExecResult

runner = CliRunner()
LIMITS = ExecLimits(timeout_s=5.0)

QUESTIONS = [
    {"db_id": "store", "question": "names", "query": "SELECT name FROM item ORDER BY id"},
    {"db_id": "store", "question": "count", "query": "SELECT count(*) FROM item"},
    {"db_id": "store", "question": "photos", "query": "SELECT id, photo FROM item ORDER BY id"},
    {"db_id": "store", "question": "prices", "query": "SELECT name, price FROM item WHERE price > 2"},
    {"db_id": "store", "question": "broken gold", "query": "SELECT price FROM nowhere"},
    {"db_id": "store", "question": "cheapest", "query": "SELECT name FROM item ORDER BY price LIMIT 1"},
]
PREDICTIONS = [
    "SELECT name FROM item ORDER BY id",
    "SELECT 5",
    "SELECT id, photo FROM item ORDER BY id",
    "SELECT name, price FROM item",
    "SELECT 1",
    "SELECT name FROM item ORDER BY price DESC LIMIT 1",
]
#: The gold the outage tests take down (its prediction differs from it).
DOWNED_GOLD = QUESTIONS[3]["query"]


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """questions.json, predictions.txt and database/store/store.sqlite (with blobs and floats)."""
    root = tmp_path_factory.mktemp("store")
    path = root / "database" / "store" / "store.sqlite"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, price REAL, photo BLOB)")
    conn.executemany(
        "INSERT INTO item VALUES (?, ?, ?, ?)",
        [
            (1, "apple", 1.25, b"\x89PNG\x00\xff"),
            (2, "pear", 2.5, b""),
            (3, "soap", 3.75, None),
            (4, "melon", 0.1, b"ab"),
        ],
    )
    conn.commit()
    conn.close()
    (root / "questions.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    (root / "predictions.txt").write_text("\n".join(PREDICTIONS) + "\n", encoding="utf-8")
    return root


def run_eval(task: Path, out: Path, cache: Path) -> list[dict[str, Any]]:
    """A real ``eval`` of the predictions file over ``cache``: its records."""
    result = runner.invoke(
        app,
        ["eval", "--task", str(task / "questions.json"), "--predictions", str(task / "predictions.txt"),
         "--preset", "strict", "--out", str(out), "--cache-dir", str(cache), "--workers", "1", "--timeout", "5",
         "--no-plots", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").split("\n") if line]


@pytest.fixture(scope="module")
def clean(task: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    """The clean run's records and the cache it filled (kept pristine: tests damage copies)."""
    root = tmp_path_factory.mktemp("clean")
    records = run_eval(task, root / "out", root / "cache")
    assert [r["verdict"] for r in records] == ["match", "mismatch", "match", "mismatch", "gold_invalid", "mismatch"]
    assert entries(root / "cache")
    return records, root / "cache"


def entries(cache: Path) -> list[Path]:
    """The result entries of a cache folder (not the references)."""
    return sorted(p for p in cache.glob("??/*.json"))


# -- damage: each rewrites the entry files of a cache folder -------------------------------------------


def _signed(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its digest made to fit its (damaged) content: only the field checks can refuse it."""
    from progress_sql.judge.cache import _entry_digest

    return {**data, "digest": _entry_digest(data["key"], data["result"])}


def _each_entry(change: Callable[[dict[str, Any]], dict[str, Any] | None], *, sign: bool) -> Callable[[Path], int]:
    """A damage that applies ``change`` to every entry it fits (None: leave that one); the count changed."""

    def damage(cache: Path) -> int:
        changed = 0
        for path in entries(cache):
            data = json.loads(path.read_text(encoding="ascii"))
            new = change(json.loads(json.dumps(data)))
            if new is None:
                continue
            path.write_text(json.dumps(_signed(new) if sign else new), encoding="utf-8")
            changed += 1
        return changed

    return damage


def _raw(content: Callable[[bytes], bytes]) -> Callable[[Path], int]:
    def damage(cache: Path) -> int:
        for path in entries(cache):
            path.write_bytes(content(path.read_bytes()))
        return len(entries(cache))

    return damage


def _result(change: Callable[[dict[str, Any]], bool]) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """An entry change made on its result (``change`` returns False where it does not apply)."""

    def apply(data: dict[str, Any]) -> dict[str, Any] | None:
        return data if change(data["result"]) else None

    return apply


def _blob_cells(result: dict[str, Any]) -> list[dict[str, str]]:
    return [cell for row in result["rows"] for cell in row if isinstance(cell, dict)]


def _set_b64(value: str) -> Callable[[dict[str, Any]], bool]:
    def change(result: dict[str, Any]) -> bool:
        cells = _blob_cells(result)
        for cell in cells:
            cell["b64"] = value
        return bool(cells)

    return change


def _edit_first_cell(result: dict[str, Any]) -> bool:
    if not result["rows"]:
        return False
    cell = result["rows"][0][0]
    result["rows"][0][0] = cell + "x" if isinstance(cell, str) else 99 if isinstance(cell, int) else "edited"
    return True


def _into_error(result: dict[str, Any]) -> bool:
    if result["status"] != "ok":
        return False
    result.update(status="error", columns=[], rows=[], error="no such table: item", truncated=False)
    return True


def _into_answer(result: dict[str, Any]) -> bool:
    if result["status"] != "error":
        return False
    result.update(status="ok", columns=["price"], rows=[[1]], error=None)
    return True


def _set(field: str, value: Any) -> Callable[[dict[str, Any]], bool]:
    def change(result: dict[str, Any]) -> bool:
        result[field] = value
        return True

    return change


def _drop(field: str) -> Callable[[dict[str, Any]], bool]:
    def change(result: dict[str, Any]) -> bool:
        del result[field]
        return True

    return change


def _short_row(result: dict[str, Any]) -> bool:
    if not result["rows"]:
        return False
    result["rows"][0] = result["rows"][0][:-1]
    return True


def _bool_cell(result: dict[str, Any]) -> bool:
    if not result["rows"]:
        return False
    result["rows"][0][0] = True
    return True


def _format_2(data: dict[str, Any]) -> dict[str, Any]:
    """The entry as format 2 wrote it (no key, no digest): an older format is a miss."""
    return {"format": 2, **data["result"]}


def _no_status(data: dict[str, Any]) -> dict[str, Any]:
    """The shape that ended in ``KeyError: 'status'`` before."""
    old = _format_2(data)
    del old["status"]
    return old


def _swap_keys(cache: Path) -> int:
    """Each entry's file moved under the next entry's key (a foreign entry: right shape, wrong key)."""
    paths = entries(cache)
    texts = [p.read_bytes() for p in paths]
    for path, text in zip(paths, texts[1:] + texts[:1], strict=True):
        path.write_bytes(text)
    return len(paths)


def _write_raw_huge(cache: Path) -> int:
    changed = 0
    for path in entries(cache):
        data = json.loads(path.read_text(encoding="ascii"))
        if data["result"]["rows"]:
            cell = json.dumps(data["result"]["rows"][0][0])
            path.write_text(path.read_text().replace(f'"rows":[[{cell}', f'"rows":[[{"9" * 5001}', 1))
            changed += 1
    return changed


# (name, damage): the damage returns how many entries it changed (at least one must be)
DAMAGES: list[tuple[str, Callable[[Path], int]]] = [
    ("invalid-base64", _each_entry(_result(_set_b64("@@ not base64 @@")), sign=False)),
    ("invalid-base64-signed", _each_entry(_result(_set_b64("@@ not base64 @@")), sign=True)),
    ("base64-not-canonical-signed", _each_entry(_result(_set_b64("YW=")), sign=True)),
    ("unknown-status", _each_entry(_result(_set("status", "maybe")), sign=False)),
    ("unknown-status-signed", _each_entry(_result(_set("status", "maybe")), sign=True)),
    ("stored-timeout-signed", _each_entry(_result(_set("status", "timeout")), sign=True)),
    ("edited-rows", _each_entry(_result(_edit_first_cell), sign=False)),
    ("gold-into-error", _each_entry(_result(_into_error), sign=False)),
    ("error-into-answer", _each_entry(_result(_into_answer), sign=False)),
    ("missing-field-signed", _each_entry(_result(_drop("truncated")), sign=True)),
    ("extra-field-signed", _each_entry(_result(_set("cost", 1)), sign=True)),
    ("short-row-signed", _each_entry(_result(_short_row), sign=True)),
    ("bool-cell-signed", _each_entry(_result(_bool_cell), sign=True)),
    ("negative-elapsed-signed", _each_entry(_result(_set("elapsed_s", -1.0)), sign=True)),
    ("format-2-entry", _each_entry(_format_2, sign=False)),
    ("no-status-shape", _each_entry(_no_status, sign=False)),
    ("a-list", _raw(lambda _: b"[1, 2, 3]")),
    ("foreign-key", _swap_keys),
    ("half-a-file", _raw(lambda data: data[: len(data) // 2])),
    ("empty-file", _raw(lambda _: b"")),
    ("not-utf8", _raw(lambda _: b"\xff\xfe{}")),
    ("nested-100000-deep", _raw(lambda _: b"[" * 100_000 + b"]" * 100_000)),
    ("integer-of-5001-digits", _write_raw_huge),
]


@pytest.mark.parametrize(("name", "damage"), DAMAGES, ids=[name for name, _ in DAMAGES])
def test_a_damaged_cache_gives_the_clean_runs_records(
    name: str, damage: Callable[[Path], int], task: Path, clean: tuple[list[dict[str, Any]], Path], tmp_path: Path
) -> None:
    records, pristine = clean
    cache = tmp_path / "cache"
    shutil.copytree(pristine, cache)
    assert damage(cache) >= 1, f"{name} damaged nothing"
    assert run_eval(task, tmp_path / "first", cache) == records, name
    # the damaged entries were recomputed and written back whole: the second run reads them
    assert all(read_entry(path, path.stem) is not None for path in entries(cache)), name
    assert len(entries(cache)) == len(entries(pristine))
    assert run_eval(task, tmp_path / "second", cache) == records, name


# -- errors from outside, as the real runners report them ----------------------------------------------


def outage_result(tmp_path: Path) -> ExecResult:
    """What the PostgreSQL runner reports when its server cannot be reached (no server at the socket)."""
    pytest.importorskip("psycopg", reason="needs the [engines] extra (scripts/test.sh installs it)")
    from progress_sql.execution.engines.postgres import PostgresRunner

    location = f"postgresql://reader@/bench?host={tmp_path / 'no-server'}#store"
    runner_ = PostgresRunner()
    try:
        return runner_.run(location, DOWNED_GOLD, LIMITS)
    finally:
        runner_.close()


def interrupted_result(pg_admin: str, interrupt: str) -> ExecResult:
    """What the PostgreSQL runner reports when another session runs ``interrupt`` (pg_terminate_backend
    or pg_cancel_backend) on the backend running its query."""
    import psycopg

    from progress_sql.execution.engines.postgres import PostgresRunner

    runner_ = PostgresRunner()
    found: list[ExecResult] = []
    thread = threading.Thread(
        # The runner's own deadline outlasts the search for its backend below (10 s), so that the interrupt, not the
        # deadline, ends the query on a loaded machine (CI of 2026-12-06: a cancel after 5 s met a 5 s deadline).
        target=lambda: found.append(runner_.run(f"{pg_admin}#public", "SELECT pg_sleep(20)", ExecLimits(timeout_s=30)))
    )
    try:
        with psycopg.connect(pg_admin, autocommit=True) as admin:
            thread.start()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                row = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = 'progress-sql' AND state = 'active'"
                ).fetchone()
                if row is not None:
                    admin.execute(f"SELECT {interrupt}(%s)", (row[0],))
                    break
                time.sleep(0.05)
            thread.join(timeout=30)
    finally:
        runner_.close()
    assert found, "the query did not end"
    return found[0]


def test_the_runners_say_which_errors_came_from_outside(tmp_path: Path, pg_admin: str) -> None:
    from progress_sql.execution.engines.postgres import PostgresRunner

    outage = outage_result(tmp_path)
    assert (outage.status, outage.failed_outside) == ("error", True), outage
    terminated = interrupted_result(pg_admin, "pg_terminate_backend")
    assert (terminated.status, terminated.failed_outside) == ("error", True), terminated
    cancelled = interrupted_result(pg_admin, "pg_cancel_backend")
    assert (cancelled.status, cancelled.failed_outside) == ("error", True), cancelled
    runner_ = PostgresRunner()
    try:
        own = runner_.run(f"{pg_admin}#public", "SELECT * FROM nowhere", LIMITS)
        timeout = runner_.run(f"{pg_admin}#public", "SELECT pg_sleep(5)", ExecLimits(timeout_s=0.5))
    finally:
        runner_.close()
    assert (own.status, own.failed_outside) == ("error", False), own
    assert (timeout.status, timeout.failed_outside) == ("timeout", False), timeout


def test_the_pool_and_sqlite_say_which_errors_came_from_outside(tmp_path: Path, pool: ExecutionPool) -> None:
    missing = pool.run(ExecJob(str(tmp_path / "gone.sqlite"), "SELECT 1", LIMITS))
    assert (missing.status, missing.failed_outside) == ("error", True), missing
    own = pool.run(ExecJob(str(tmp_path / "gone.sqlite"), "DELETE FROM t", LIMITS))
    assert (own.status, own.failed_outside) == ("error", False), own


@dataclass
class Outage:
    """While ``result`` is set, the pool answers :data:`DOWNED_GOLD` with it (an executor's own report
    of an outage); every job runs for real either way."""

    result: ExecResult | None = None


@pytest.fixture
def outage(monkeypatch: pytest.MonkeyPatch) -> Outage:
    original = ExecutionPool.run_many
    state = Outage()

    def run_many(self: ExecutionPool, jobs: Sequence[ExecJob], **kwargs: Any) -> list[ExecResult]:
        results = original(self, jobs, **kwargs)
        if state.result is None:
            return results
        return [state.result if job.sql == DOWNED_GOLD else result for job, result in zip(jobs, results, strict=True)]

    monkeypatch.setattr(ExecutionPool, "run_many", run_many)
    return state


@pytest.mark.parametrize("failure", ["outage", "terminated"])
def test_an_error_from_outside_is_never_cached(
    failure: str, task: Path, clean: tuple[list[dict[str, Any]], Path], tmp_path: Path, pg_admin: str, outage: Outage
) -> None:
    records, pristine = clean
    result = outage_result(tmp_path) if failure == "outage" else interrupted_result(pg_admin, "pg_terminate_backend")
    assert result.failed_outside
    outage.result = result
    cache = tmp_path / "cache"
    during = run_eval(task, tmp_path / "during", cache)
    assert during[3]["verdict"] == "gold_invalid"  # the run during the outage says so ...
    assert [r for i, r in enumerate(during) if i != 3] == [r for i, r in enumerate(records) if i != 3]
    assert len(entries(cache)) == len(entries(pristine)) - 1  # ... and keeps nothing of it
    outage.result = None
    assert run_eval(task, tmp_path / "after", cache) == records
    assert run_eval(task, tmp_path / "again", cache) == records


def test_put_keeps_no_outside_failure_and_no_timeout_on_disk(tmp_path: Path) -> None:
    cache = GoldCache(tmp_path)
    cache.put("aa" * 32, ExecResult("error", error="server closed the connection unexpectedly", failed_outside=True))
    cache.put("bb" * 32, ExecResult("timeout", error="exceeded 1 s"))
    cache.put("cc" * 32, ExecResult("error", error="no such table: t"))
    assert cache.get("aa" * 32) is None
    assert cache.get("bb" * 32) == ExecResult("timeout", error="exceeded 1 s")  # this run's memory only
    fresh = GoldCache(tmp_path)
    assert (fresh.get("aa" * 32), fresh.get("bb" * 32)) == (None, None)
    assert fresh.get("cc" * 32) == ExecResult("error", error="no such table: t")


# -- invariants of an entry ----------------------------------------------------------------------------

_CELLS = st.one_of(
    st.none(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),  # surrogates and line separators included
    st.binary(max_size=8),
)


@st.composite
def _results(draw: st.DrawFn) -> ExecResult:
    if draw(st.booleans()):
        return ExecResult("error", error=draw(st.text(max_size=20)), elapsed_s=draw(st.floats(0, 100)))
    width = draw(st.integers(0, 3))
    columns = tuple(draw(st.lists(st.text(max_size=4), min_size=width, max_size=width)))
    rows = tuple(tuple(draw(st.lists(_CELLS, min_size=width, max_size=width))) for _ in range(draw(st.integers(0, 4))))
    return ExecResult("ok", columns, rows, elapsed_s=draw(st.floats(0, 100)), truncated=draw(st.booleans()))


def _same(a: ExecResult | None, b: ExecResult) -> bool:
    """Equal, NaN cells counting as equal to NaN."""
    return a is not None and repr(a) == repr(b)


@settings(max_examples=150, deadline=None)
@given(result=_results(), position=st.integers(0, 10**6), byte=st.integers(0, 255))
def test_an_entry_reads_back_as_written_or_not_at_all(
    result: ExecResult, position: int, byte: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("entry")
    key = "ab" * 32
    GoldCache(folder).put(key, result)
    path = folder / "ab" / f"{key}.json"
    assert _same(GoldCache(folder).get(key), result)
    data = bytearray(path.read_bytes())
    data[position % len(data)] = byte
    path.write_bytes(bytes(data))
    again = GoldCache(folder).get(key)
    assert again is None or _same(again, result)  # one changed byte: a miss (recomputed), or the same result


def test_a_reference_under_another_key_is_a_miss(tmp_path: Path) -> None:
    cache = GoldCache(tmp_path)
    cache.put_reference("aa" * 32, {"tree": [1, 2]})
    assert GoldCache(tmp_path).get_reference("aa" * 32) == {"tree": [1, 2]}
    moved = tmp_path / "references" / "bb" / f"{'bb' * 32}.pickle"
    moved.parent.mkdir(parents=True)
    shutil.copy(tmp_path / "references" / "aa" / f"{'aa' * 32}.pickle", moved)
    assert GoldCache(tmp_path).get_reference("bb" * 32) is None
    stored = tmp_path / "references" / "aa" / f"{'aa' * 32}.pickle"
    stored.write_bytes(stored.read_bytes()[:-1] + b"\x00")
    assert GoldCache(tmp_path).get_reference("aa" * 32) is None


def test_encoded_entries_are_ascii_and_name_their_key() -> None:
    text = encode_entry("cd" * 32, ExecResult("ok", ("a",), (("\ud800\u2028",), (b"\x00",))))
    assert text.isascii()
    data = json.loads(text)
    assert data["key"] == "cd" * 32
    assert data["result"]["rows"][1] == [{"b64": base64.b64encode(b"\x00").decode()}]


# -- temporary files of killed writes --------------------------------------------------------------------


def test_stale_temporaries_are_removed(tmp_path: Path) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(finished.stdout)
    folder = tmp_path / "ab"
    folder.mkdir()
    of_dead = folder / f"{'ab' * 32}.json.tmp{dead}"
    old_format = folder / f"{'ab' * 32}.tmp{dead}"
    of_live = folder / f"{'cd' * 32}.json.tmp{os.getpid()}"
    old_but_live = folder / f"{'ef' * 32}.json.tmp{os.getpid()}"
    entry = folder / f"{'ab' * 32}.json"
    for path in (of_dead, old_format, of_live, old_but_live, entry):
        path.write_text("{")
    hours_ago = time.time() - STALE_TEMPORARY_S - 60
    os.utime(old_but_live, (hours_ago, hours_ago))
    GoldCache(tmp_path)  # opening the folder cleans it
    assert [p.exists() for p in (of_dead, old_format, old_but_live)] == [False, False, False]
    assert [p.exists() for p in (of_live, entry)] == [True, True]  # a live writer's file, and the entries, stay
    assert remove_stale_temporaries(tmp_path) == []


# -- a bad --cache-dir: one line, exit 2, before any work ------------------------------------------------


@pytest.mark.parametrize("kind", ["a-file", "below-a-file", "unwritable"])
def test_a_bad_cache_dir_is_refused_before_any_work(kind: str, task: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "cache-file"
    a_file.write_text("not a folder")
    # /sys takes no new file from anyone, root included
    cache = {"a-file": a_file, "below-a-file": a_file / "sub", "unwritable": Path("/sys")}[kind]
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["eval", "--task", str(task / "questions.json"), "--predictions", str(task / "predictions.txt"),
         "--out", str(out), "--cache-dir", str(cache), "--workers", "1", "--no-plots"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().split("\n") if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error:"), result.output
    assert "gold cache folder" in lines[0], result.output
    assert [(out / name).exists() for name in ("summary.json", "samples.jsonl")] == [False, False]
    assert a_file.read_text() == "not a folder"
