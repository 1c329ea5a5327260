"""Databases for environment tests, built from the committed SQL scripts in tests/fixtures/sql."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from progress_sql.execution.pool import ExecutionPool

SQL_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "sql"


def build_database(script: str, folder: Path) -> Path:
    """Create ``folder/<name>/<name>.sqlite`` from ``tests/fixtures/sql/<script>``."""
    name = Path(script).stem
    path = folder / name / f"{name}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.executescript((SQL_DIR / script).read_text(encoding="utf-8"))
        connection.commit()
    finally:
        connection.close()
    return path


@pytest.fixture(scope="session")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("databases"))


@pytest.fixture(scope="session")
def pool() -> Iterator[ExecutionPool]:
    with ExecutionPool(workers=1) as shared:
        yield shared


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="session")
def music_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder in Spider's release layout: questions.json and database/music/music.sqlite."""
    root = tmp_path_factory.mktemp("music_data")
    build_database("music.sql", root / "database")
    (root / "questions.json").write_text((FIXTURES / "music_questions.json").read_text(encoding="utf-8"))
    return root
