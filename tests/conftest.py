"""Shared test fixtures: real SQLite files built from tests/fixtures/sql, the shared benchmark data
(skipped with a message when absent), and one execution pool per session."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

# Set before anything imports numerical libraries: on a busy 2-core machine more threads are slower.
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
SQL_FIXTURES = REPO / "tests" / "fixtures" / "sql"
SHARED_DATA = REPO.parent / "shared" / "data"


def build_database(script: str, folder: Path) -> Path:
    """Build ``folder/<script>.sqlite`` from ``tests/fixtures/sql/<script>.sql``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{script}.sqlite"
    conn = sqlite3.connect(path)
    try:
        conn.executescript((SQL_FIXTURES / f"{script}.sql").read_text(encoding="utf-8"))
        conn.commit()
    finally:
        conn.close()
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``, or a skip that says why."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"../shared/data not found: {SHARED_DATA} (benchmark data for agreement tests)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def make_database() -> object:
    """The :func:`build_database` function, for tests that need their own copy."""
    return build_database


@pytest.fixture(scope="session")
def compare_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("compare", tmp_path_factory.mktemp("compare"))


@pytest.fixture(scope="session")
def pool() -> Iterator[object]:
    from progress_sql.execution.pool import ExecutionPool

    with ExecutionPool(workers=2, memory_bytes=1536 * 2**20) as shared:
        yield shared
