"""Shared test settings and fixtures.

Tests run single-threaded numerics (``OMP_NUM_THREADS=1``): on a busy 2-core machine more threads make
torch many times slower. Tests that need the real benchmark files beside the checkout take the
``shared_data`` fixture, which skips them with a message when ``../shared/data`` is absent (a user's
fresh clone has no ``../shared``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
