"""A tiny tokenizer and Qwen2 model built here (nothing downloaded) for real TRL steps on CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_database

torch = pytest.importorskip("torch", reason="TRL tests need the [trl] extra")
transformers = pytest.importorskip("transformers", reason="TRL tests need the [trl] extra")
pytest.importorskip("trl", reason="TRL tests need the [trl] extra")

from tests.tiny_lm import tiny_model as build_tiny_model  # noqa: E402
from tests.tiny_lm import tiny_tokenizer as build_tiny_tokenizer  # noqa: E402

CORPUS = [
    "Q [music] How many singers do we have?\nA: <think></think><sql>SELECT count(*) FROM singer</sql>",
    "\nF: SELECT_ERROR WHERE_MISSING JOIN_MISSING PARSE_ERROR VALUES\nA:",
    "SELECT name , country , age FROM singer WHERE country = 'France' AND age > 40 GROUP BY country",
    "SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id ORDER BY count(*) DESC",
] * 10


@pytest.fixture(scope="session")
def tiny_tokenizer() -> Any:
    return build_tiny_tokenizer(CORPUS)


@pytest.fixture
def tiny_model(tiny_tokenizer: Any) -> Any:
    return build_tiny_model(tiny_tokenizer)


@pytest.fixture(scope="session")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("databases"))
