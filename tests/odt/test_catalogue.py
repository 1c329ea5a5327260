"""Every catalogue entry: its example pair fires its tag, and docs/odt.md documents it."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.odt import CATALOGUE, OdtConfig, TagSpec, diagnose
from progress_sql.odt.tags import LOCAL_RULES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "odt.md"


@pytest.mark.parametrize("spec", CATALOGUE, ids=[spec.name for spec in CATALOGUE])
def test_example_pair_fires_its_tag(spec: TagSpec) -> None:
    diagnosis = diagnose(spec.example_pred, spec.example_gold)
    assert spec.name in diagnosis.tags
    assert diagnosis.f_struct < 1.0 or spec.name == "PARSE_ERROR"
    assert spec.example_gold not in diagnosis.feedback


@pytest.mark.parametrize("spec", CATALOGUE, ids=[spec.name for spec in CATALOGUE])
def test_example_gold_against_itself_is_clean(spec: TagSpec) -> None:
    diagnosis = diagnose(spec.example_gold, spec.example_gold)
    assert diagnosis.tags == ()
    assert diagnosis.f_struct == 1.0


def test_every_local_rule_is_catalogued() -> None:
    names = {spec.name for spec in CATALOGUE}
    assert {rule.tag for rule in LOCAL_RULES} <= names


def test_docs_describe_every_tag_and_its_example() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for spec in CATALOGUE:
        assert f"`{spec.name}`" in text, f"docs/odt.md lacks {spec.name}"
        assert spec.description in text


def test_threshold_lowered_silences_a_tag() -> None:
    pred, gold = "SELECT name FROM singer WHERE age > 30 AND x = 1", "SELECT name FROM singer WHERE age > 30"
    assert "WHERE_ERROR" in diagnose(pred, gold).tags
    lenient = OdtConfig(thresholds={"WHERE_ERROR": 0.5})  # W similarity is 1/2: not below 0.5
    assert "WHERE_ERROR" not in diagnose(pred, gold, config=lenient).tags
