"""The audit fixture database, built once per session from tests/fixtures/sql/audit.sql."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import build_database


@pytest.fixture(scope="session")
def audit_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("audit.sql", tmp_path_factory.mktemp("audit") / "database")
