"""SQLite's printf()/format() width bombs end by their deadline with a clear error, through the real
pool and the write path; ordinary calls still give SQLite's own results (a property over formats)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progress_sql.execution.executor import ExecLimits, open_readonly
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.printf_guard import MAX_PRINTF_PADDING
from progress_sql.execution.write import run_write, write_job
from progress_sql.types import WriteCheck, WriteSpec

DEADLINE_S = 1.0
LIMITS = ExecLimits(timeout_s=DEADLINE_S)
REFUSED = "printf() refused"
NUMBERS = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 100000)"

# (name, SQL): each a single call that would build billions of characters inside one VM step
BOMBS = [
    ("precision-star-c", "SELECT length(printf('%.*c', 2000000000, 'x'))"),
    ("width-d", "SELECT length(printf('%2000000000d', 1))"),
    ("precision-f", "SELECT length(printf('%.2000000000f', 1.0))"),
    ("width-percent", "SELECT length(printf('%2000000000%'))"),
    ("format-name", "SELECT length(format('%.*c', 2000000000, 'x'))"),
    ("star-from-text", "SELECT length(printf('%.*c', '2000000000', 'x'))"),
    ("star-negative", "SELECT length(printf('%*d', -2000000000, 1))"),
    ("blob-format", "SELECT length(printf(CAST('%2000000000d' AS BLOB), 1))"),
    ("built-format", "SELECT length(printf('%' || (1000000000 * 2) || 'd', 1))"),
    ("from-a-column", "SELECT length(printf('%.*c', age * 100000000, name)) FROM singer"),
    ("digits-beyond-python", f"SELECT length(printf('%{'9' * 5000}d', 1))"),
]


@pytest.mark.parametrize(("name", "sql"), BOMBS, ids=[name for name, _ in BOMBS])
def test_a_printf_bomb_is_refused_by_its_deadline(name: str, sql: str, compare_db: Path, pool: ExecutionPool) -> None:
    started = time.monotonic()
    result = pool.run(ExecJob(str(compare_db), sql, LIMITS))
    assert time.monotonic() - started < DEADLINE_S + 1.0, name
    assert result.status == "error", (name, result)
    assert (result.error or "").startswith(REFUSED), (name, result.error)
    assert f"at most {MAX_PRINTF_PADDING:,}" in (result.error or "")


def test_many_calls_under_the_cap_still_meet_the_deadline(compare_db: Path, pool: ExecutionPool) -> None:
    """Each call pads to just under the cap, but there are many between two progress-handler checks:
    the guard checks the deadline on every call."""
    sql = f"{NUMBERS} SELECT count(printf('%{MAX_PRINTF_PADDING}d', x)) FROM n"
    started = time.monotonic()
    result = pool.run(ExecJob(str(compare_db), sql, LIMITS))
    assert time.monotonic() - started < DEADLINE_S + 1.0
    assert result.status == "timeout", result


def test_a_call_at_the_cap_runs(compare_db: Path, pool: ExecutionPool) -> None:
    result = pool.run(ExecJob(str(compare_db), f"SELECT length(printf('%{MAX_PRINTF_PADDING}d', 7))", LIMITS))
    assert result.status == "ok", result
    assert result.rows == ((MAX_PRINTF_PADDING,),)


def test_text_that_is_not_utf8_is_a_clear_error(compare_db: Path, pool: ExecutionPool) -> None:
    """Python's sqlite3 reads a function's text arguments as UTF-8 before the guard runs: such a call
    fails with a message that says so (SQLite's own printf would copy the bytes); a blob is read."""
    broken = pool.run(ExecJob(str(compare_db), "SELECT printf('%s|', CAST(x'41ff' AS TEXT))", LIMITS))
    assert broken.status == "error"
    assert broken.error == "printf() could not read its arguments (text that is not valid UTF-8)"
    blob = pool.run(ExecJob(str(compare_db), "SELECT printf('%s|', x'41ff')", LIMITS))
    assert blob.status == "ok"
    assert blob.rows == (("A\ufffd|",),)


def test_a_write_script_cannot_plant_the_bomb(compare_db: Path) -> None:
    spec = WriteSpec(("singer",), (WriteCheck("names", "SELECT name FROM singer ORDER BY singer_id"),), ("update",))
    job = write_job(str(compare_db), "UPDATE singer SET name = printf('%.*c', 2000000000, 'x')", spec, LIMITS)
    started = time.monotonic()
    result = run_write(job)
    assert time.monotonic() - started < DEADLINE_S + 1.0
    assert result.status == "error"
    assert (result.error or "").startswith(REFUSED), result.error
    ordinary = run_write(write_job(str(compare_db), "UPDATE singer SET name = printf('%05d', age)", spec, LIMITS))
    assert ordinary.status == "ok", ordinary
    assert ordinary.probes[0].rows[0] == ("00052",)


# -- ordinary calls: the guarded printf gives SQLite's own result ------------------------------------


@pytest.fixture(scope="module")
def connections(compare_db: Path) -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
    """The executor's guarded connection and a plain one, whose printf is SQLite's own."""
    guarded = open_readonly(compare_db, LIMITS)
    plain = sqlite3.connect(":memory:")
    try:
        yield guarded, plain
    finally:
        guarded.close()
        plain.close()


_FLAGS = st.text(alphabet="-+ #!0,", max_size=3)
_AMOUNT = st.one_of(st.just(""), st.just("*"), st.integers(0, 40).map(str))
_DIRECTIVES = st.builds(
    lambda flags, width, precision, long, conversion: f"%{flags}{width}{precision}{long}{conversion}",
    _FLAGS,
    _AMOUNT,
    st.one_of(st.just(""), _AMOUNT.map(lambda amount: "." + amount)),
    st.sampled_from(["", "l", "ll"]),
    st.sampled_from([*"dsgzqQwcouxXfeEGinp%", "y", ""]),
)
_FORMATS = st.lists(st.one_of(_DIRECTIVES, st.text(alphabet="ab %|", max_size=4)), max_size=5).map("".join)
# Arguments a "*" may read as a width: six of them stay under the cap together.
_SMALL = 150_000
_VALUES = st.one_of(
    st.none(),
    st.integers(-_SMALL, _SMALL),
    st.integers(-60, 60),
    st.floats(-_SMALL, _SMALL),
    st.just(float("nan")),
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="0123456789"), max_size=6),
    st.binary(max_size=4).filter(lambda data: data.isascii() and not any(chr(b).isdigit() for b in data)),
)


@settings(max_examples=300, deadline=None)
@given(fmt=_FORMATS, args=st.lists(_VALUES, max_size=6))
def test_ordinary_calls_give_sqlites_result(
    fmt: str, args: list[Any], connections: tuple[sqlite3.Connection, sqlite3.Connection]
) -> None:
    """Every call whose widths stay under the cap (all of these) gives SQLite's own value."""
    guarded, plain = connections
    placeholders = ", ".join("?" * (1 + len(args)))
    expected = plain.execute(f"SELECT printf({placeholders})", (fmt, *args)).fetchone()
    assert guarded.execute(f"SELECT printf({placeholders})", (fmt, *args)).fetchone() == expected
