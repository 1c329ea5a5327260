"""Offline ODT error analysis (Progress-SQL, Appendix E.4 and Table 8); what it reports:
docs/evaluation.md#odt-error-analysis.

>>> from progress_sql.odt import prepare_gold
>>> gold = prepare_gold("SELECT name FROM singer WHERE age > 30")
>>> tags = [diagnosis_tags("SELECT name FROM singer", gold), diagnosis_tags("SELECT name, age FROM singer", gold)]
>>> tags
[('WHERE_MISSING',), ('SELECT_ERROR', 'WHERE_MISSING')]
>>> report = analyze(tags)
>>> report["rates"]["WHERE"], report["rates"]["SELECT"], report["average"]
(1.0, 0.5, 0.375)
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from progress_sql.odt.config import OdtConfig
from progress_sql.odt.records import GoldReference
from progress_sql.odt.tags import TAG_ORDER, TAGS

#: The four categories the paper averages ("Avg. Err.").
MAIN_CATEGORIES: tuple[str, ...] = ("SELECT", "JOIN", "WHERE", "GROUP")
OTHER_CATEGORIES: tuple[str, ...] = ("other", "nesting", "parse")


def ratio(part: float, whole: float) -> float | None:
    """``part / whole``; None when ``whole`` is 0 (a rate over nothing is unknown, not 0)."""
    return part / whole if whole else None


def diagnosis_tags(pred_sql: str | None, gold: GoldReference, config: OdtConfig | None = None) -> tuple[str, ...]:
    """The ODT tags of one prediction under ``config`` (default: the default profile's ODT; no SQL at
    all counts as a parse failure)."""
    from progress_sql.odt.diagnosis import diagnose

    if config is None:
        return diagnose(pred_sql or "", gold).tags
    return diagnose(pred_sql or "", gold, config=config).tags


def categories(tags: Sequence[str]) -> frozenset[str]:
    """The catalogue categories of ``tags``."""
    return frozenset(TAGS[tag].category for tag in tags if tag in TAGS)


def analyze(tag_sets: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Mismatch rates per category, their average and the tag histogram over a prediction set."""
    total = len(tag_sets)
    found = [categories(tags) for tags in tag_sets]
    rates = {category: ratio(sum(category in item for item in found), total) for category in MAIN_CATEGORIES}
    known = [value for value in rates.values() if value is not None]
    histogram = Counter(tag for tags in tag_sets for tag in tags)
    return {
        "examples": total,
        "rates": rates,
        "average": ratio(sum(known), len(known)),
        "other_rates": {
            category: ratio(sum(category in item for item in found), total) for category in OTHER_CATEGORIES
        },
        "any_tag_rate": ratio(sum(bool(tags) for tags in tag_sets), total),
        "tag_histogram": {tag: histogram[tag] for tag in sorted(histogram, key=lambda t: TAG_ORDER.get(t, 999))},
    }


def odt_config_version(config: OdtConfig | None = None) -> str:
    """A short stable hash of every ODT weight and threshold (recorded with each evaluation)."""
    payload = json.dumps(asdict(config or OdtConfig()), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]
