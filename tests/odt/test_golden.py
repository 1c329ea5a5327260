"""Golden ODT cases: exact tag sets and F_struct for every file in tests/odt/fixtures/*.odt."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from progress_sql.odt import CATALOGUE, diagnose

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class GoldenCase:
    name: str
    pred: str
    gold: str
    tags: frozenset[str]
    low: float
    high: float
    source: str


def _parse_score(text: str) -> tuple[float, float]:
    if ".." in text:
        low, high = (float(part) for part in text.split(".."))
        assert 0 <= high - low <= 0.1 + 1e-9, f"range {text} is wider than 0.1"
        return low, high
    value = float(text)
    return value - 1e-4, value + 1e-4


def load_cases() -> list[GoldenCase]:
    cases = []
    for path in sorted(FIXTURES.glob("*.odt")):
        blocks = path.read_text(encoding="utf-8").split("\n\n")
        for block in blocks:
            fields: dict[str, str] = {}
            for line in block.splitlines():
                if line.startswith("#") or not line.strip():
                    continue
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
            if not fields:
                continue
            tags = frozenset() if fields["tags"] == "-" else frozenset(t.strip() for t in fields["tags"].split(","))
            low, high = _parse_score(fields["score"])
            cases.append(GoldenCase(fields["name"], fields["pred"], fields["gold"], tags, low, high, path.name))
    return cases


CASES = load_cases()


def test_fixture_collection_is_complete() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names)), "golden case names must be unique"
    assert len(CASES) >= 60
    covered = set().union(*(case.tags for case in CASES))
    assert {spec.name for spec in CATALOGUE} <= covered, "every catalogue tag needs a golden case"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_golden_case(case: GoldenCase) -> None:
    diagnosis = diagnose(case.pred, case.gold)
    assert set(diagnosis.tags) == case.tags, f"{case.source}: {case.name}"
    assert case.low <= diagnosis.f_struct <= case.high, f"{case.source}: {case.name}: F_struct {diagnosis.f_struct}"
