"""Every real gold query of Spider (dev and train) and BIRD dev against itself and a rewrite of itself.

The ODT must see a query as identical to itself (status ok, F_struct = 1, no tags), and to any rewrite
that changes only what the ODT is defined not to see: table alias names (fresh names, and aliases added
to unaliased tables), whitespace, keyword and identifier case (string literals untouched) and the order
of AND-ed conditions (every AND chain reversed). The rewrites are in :mod:`sql_rewrite` beside this file.
All 11,227 golds are checked both ways (about 20 s on the project's 2-core machine).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from progress_sql.odt import Diagnosis, GoldReference, diagnose, prepare_gold

try:
    from .sql_rewrite import rewrite
except ImportError:  # collected without a package (no __init__.py beside this file)
    from sql_rewrite import rewrite  # type: ignore[no-redef,import-not-found]

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

GOLD_FILES = {"spider/dev_gold.sql": 1034, "spider/train_gold.sql": 8659, "bird/dev_gold.sql": 1534}
TOTAL_GOLDS = 11_227
SHOWN = 5


@dataclass(frozen=True, slots=True)
class Gold:
    source: str
    line: int
    sql: str
    reference: GoldReference


def read_gold_sql(path: Path) -> list[str]:
    """The SQL column of a ``SQL<TAB>db_id`` file, one entry per line."""
    return [line.rpartition("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def golds(shared_data: Path) -> list[Gold]:
    return [
        Gold(name, line, sql, prepare_gold(sql))
        for name in GOLD_FILES
        for line, sql in enumerate(read_gold_sql(shared_data / name), start=1)
    ]


def _is_identical(diagnosis: Diagnosis) -> bool:
    return diagnosis.status == "ok" and diagnosis.f_struct == 1.0 and not diagnosis.tags


def _report(failures: Sequence[tuple[Gold, str, Diagnosis]], total: int, what: str) -> str:
    lines = [f"{len(failures)} of {total} golds are not identical to {what}; the first {SHOWN}:"]
    for gold, pred, d in failures[:SHOWN]:
        lines += [
            f"- {gold.source}:{gold.line}: status={d.status} f_struct={d.f_struct:.4f} tags={d.tags} reason={d.reason}",
            f"    gold:    {gold.sql}",
            f"    against: {pred}",
        ]
    return "\n".join(lines)


def test_gold_counts(golds: list[Gold]) -> None:
    counts = {name: sum(gold.source == name for gold in golds) for name in GOLD_FILES}
    assert counts == GOLD_FILES
    assert len(golds) == TOTAL_GOLDS


def test_every_gold_is_identical_to_itself(golds: list[Gold]) -> None:
    failures = []
    for gold in golds:
        diagnosis = diagnose(gold.sql, gold.reference)
        if not _is_identical(diagnosis):
            failures.append((gold, gold.sql, diagnosis))
    assert not failures, _report(failures, len(golds), "themselves")


def test_every_gold_is_identical_to_its_rewrite(golds: list[Gold]) -> None:
    failures = []
    rewrites = []
    for seed, gold in enumerate(golds):
        rewritten = rewrite(gold.sql, seed)
        rewrites.append(rewritten)
        diagnosis = diagnose(rewritten, gold.reference)
        if not _is_identical(diagnosis):
            failures.append((gold, rewritten, diagnosis))
    assert not failures, _report(failures, len(golds), "their rewrites")
    # The rewrites are not vacuous: every text changes, and nearly every query gets fresh aliases.
    assert all(new != gold.sql for new, gold in zip(rewrites, golds, strict=True))
    assert sum("alias_" in new.lower() for new in rewrites) >= 0.99 * len(golds)
