"""Fixtures of the environment tests: the case-study database and a shared execution pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import build_database


@pytest.fixture(scope="session")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("databases"))
