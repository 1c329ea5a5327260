"""Fixtures of the environment tests: the case-study database and a shared execution pool."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from progress_sql.execution.pool import ExecutionPool
from tests.conftest import build_database


@pytest.fixture(scope="session")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("databases"))


@pytest.fixture(scope="session")
def pool() -> Iterator[ExecutionPool]:
    with ExecutionPool(workers=1) as shared:
        yield shared
