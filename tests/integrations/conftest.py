"""A tiny tokenizer and Qwen2 model built here (nothing downloaded) for real TRL steps on CPU."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
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


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture
def chat_tokenizer(tiny_tokenizer: Any) -> Any:
    """A copy of the session's tiny tokenizer with a ChatML template (the session's stays without)."""
    tokenizer = copy.deepcopy(tiny_tokenizer)
    tokenizer.chat_template = CHATML
    return tokenizer


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``progress-sql export --format trl`` of the music questions (compact schema), as a JSONL file."""
    folder = tmp_path_factory.mktemp("trl_export")
    build_database("music.sql", folder / "database")
    questions = Path(__file__).resolve().parents[1] / "fixtures" / "music_questions.json"
    (folder / "questions.json").write_text(questions.read_text(encoding="utf-8"), encoding="utf-8")
    out = folder / "train.jsonl"
    result = CliRunner().invoke(
        app,
        ["export", "--format", "trl", "--task", str(folder / "questions.json"), "--data-dir", str(folder),
         "--out", str(out), "--schema-profile", "compact"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out
