"""Fixtures of the environment tests: the case-study database, the music example of the protocol tests, the
ODT diagnoses noted as they are made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


@pytest.fixture
def noted_diagnoses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gets "diagnose" each time an ODT diagnosis is made (the real one) from here on: a test's pool
    adds its own events beside them, to show what came first."""
    from progress_sql.odt import diagnosis as odt_diagnosis

    events: list[str] = []
    real = odt_diagnosis.diagnose

    def noted(*args: Any, **kwargs: Any) -> Any:
        events.append("diagnose")
        return real(*args, **kwargs)

    monkeypatch.setattr(odt_diagnosis, "diagnose", noted)
    return events
