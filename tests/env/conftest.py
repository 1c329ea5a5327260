"""Fixtures of the environment tests: the case-study database, the music example of the protocol tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.types import Example
from tests.conftest import build_database

#: The music example's gold (tests/env/test_probe_protocol.py, test_step_many.py).
GOLD = "SELECT name FROM singer WHERE country = 'France' AND age > 40"


@pytest.fixture(scope="session")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("databases"))


@pytest.fixture(scope="module")
def music(tmp_path_factory: pytest.TempPathFactory) -> Example:
    db = build_database("music.sql", tmp_path_factory.mktemp("databases"))
    return Example(0, "Which singers from France are over 40?", "music", str(db), GOLD)
