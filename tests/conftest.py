"""Shared test settings and fixtures.

Tests run single-threaded numerics (``OMP_NUM_THREADS=1``): on a busy 2-core machine more threads make
torch many times slower. Tests that need the real benchmark files beside the checkout take the
``shared_data`` fixture, which skips them with a message when ``../shared/data`` is absent (a user's
fresh clone has no ``../shared``).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.tasks import load_task
from progress_sql.evaluation.predictions import load_predictions
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.types import Example

os.environ.setdefault("OMP_NUM_THREADS", "1")

#: The repository root: the parent of ``tests/``.
REPO_ROOT = Path(__file__).resolve().parent.parent
#: ``../shared/data`` from the repository root: real Spider / BIRD files and model predictions.
SHARED_DATA = (REPO_ROOT / ".." / "shared" / "data").resolve()
SHARED_DATA_MISSING = (
    "../shared/data not found: this test needs the benchmark files beside the checkout (see ../shared/data/README.md)"
)


def shared_data_dir() -> Path:
    """``../shared/data`` resolved from the repository root (it may not exist)."""
    return SHARED_DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared benchmark folder; skips the test when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(SHARED_DATA_MISSING)
    return SHARED_DATA


#: Committed SQL scripts from which tests build real SQLite databases.
SQL_SCRIPTS = REPO_ROOT / "tests" / "fixtures" / "sql"


def build_database(script: str, folder: Path) -> Path:
    """Create ``folder/<name>/<name>.sqlite`` (Spider's layout) from ``tests/fixtures/sql/<script>``."""
    name = Path(script).stem
    path = folder / name / f"{name}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.executescript((SQL_SCRIPTS / script).read_text(encoding="utf-8"))
        connection.commit()
    finally:
        connection.close()
    return path


@pytest.fixture(scope="session")
def music_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder in Spider's release layout: questions.json and database/music/music.sqlite."""
    root = tmp_path_factory.mktemp("music_data")
    build_database("music.sql", root / "database")
    (root / "questions.json").write_text(
        (REPO_ROOT / "tests" / "fixtures" / "music_questions.json").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return root


@pytest.fixture(scope="session")
def make_database() -> object:
    """The :func:`build_database` function, for tests that build their own copy."""
    return build_database


@pytest.fixture(scope="session")
def compare_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Spider-layout database built from ``compare.sql`` (duplicates, floats, ties at a LIMIT)."""
    return build_database("compare.sql", tmp_path_factory.mktemp("compare"))


@pytest.fixture(scope="session")
def pool() -> Iterator[ExecutionPool]:
    """One isolated execution pool shared by the tests of a session."""
    with ExecutionPool(workers=2, memory_bytes=1536 * 2**20) as shared:
        yield shared


@pytest.fixture(scope="session")
def spider_dev(shared_data: Path) -> list[Example]:
    """Spider dev (1,034 examples; the wta_1 ones have no database) from ../shared/data."""
    return load_task("spider-dev", shared_data / "spider")


@pytest.fixture(scope="session")
def spider_gold_cache() -> GoldCache:
    """One gold-result cache for every test that scores Spider dev predictions."""
    return GoldCache()


def official_spider_verdicts(shared_data: Path, model: int, examples: int) -> tuple[list[str], list[dict[str, Any]]]:
    """A published system's Spider dev predictions and the official evaluator's verdicts on them."""
    folder = shared_data / "predictions" / "spider-dev"
    predictions = load_predictions(folder / f"model_{model}.txt", examples)
    verdicts = [json.loads(line) for line in (folder / "official" / f"model_{model}.jsonl").read_text().splitlines()]
    return predictions, verdicts


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[str]:
    """A throw-away PostgreSQL cluster (scripts/pg_cluster.sh: an unprivileged user, a temporary folder,
    a Unix socket there) with an empty database ``bench``; yields its admin connection string and
    stops the server at the end of the session. Needs the [engines] extra and PostgreSQL's server
    programs, which scripts/test.sh installs."""
    psycopg = pytest.importorskip("psycopg", reason="needs the [engines] extra (scripts/test.sh installs it)")
    folder = Path(tempfile.mkdtemp(prefix="progress-sql-pg-"))
    script = str(REPO_ROOT / "scripts" / "pg_cluster.sh")
    started = subprocess.run(["bash", script, "start", str(folder)], capture_output=True, text=True, check=False)
    if started.returncode != 0:
        raise RuntimeError(f"cannot start PostgreSQL: {started.stderr.strip()}")
    try:
        with psycopg.connect(started.stdout.strip(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        yield started.stdout.strip().replace("/postgres?", "/bench?")
    finally:
        subprocess.run(["bash", script, "stop", str(folder)], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)
