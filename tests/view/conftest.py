"""The run explorer's browser: one headless Chromium per test session (tests/view/browser.py).

Without Chromium, its driver or selenium the browser tests skip with a message; in CI (``CI`` set)
they fail instead, since scripts/test.sh installs all three."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.view import browser


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    problem = browser.missing()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    with browser.chromium() as driver:
        yield driver


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests save their screenshots: $PROGRESS_SQL_SCREENSHOTS, else a pytest temporary folder."""
    chosen = os.environ.get("PROGRESS_SQL_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
