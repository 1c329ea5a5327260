"""Every weight, threshold and message of the ODT, in one frozen config object; each default, where it
comes from and where we depart from our starting proposal: docs/odt.md#defaults-and-why.

>>> config = OdtConfig()
>>> round(sum(config.weights.as_dict().values()), 10)
1.0
>>> config.alpha
0.7
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from progress_sql.errors import ConfigError


@dataclass(frozen=True, slots=True)
class FeatureWeights:
    """Weights of the SELECT-node local similarity (they need not sum to 1; s_local divides by the sum)."""

    select: float = 0.20
    tables: float = 0.15
    joins: float = 0.15
    where: float = 0.15
    group_by: float = 0.10
    having: float = 0.05
    order_by: float = 0.05
    join_count: float = 0.025
    item_count: float = 0.025
    has_where: float = 0.10 / 7
    has_group_by: float = 0.10 / 7
    has_having: float = 0.10 / 7
    has_order_by: float = 0.10 / 7
    has_limit: float = 0.10 / 7
    has_aggregation: float = 0.10 / 7
    distinct: float = 0.10 / 7

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if not value >= 0:
                raise ConfigError(f"ODT feature weight {item.name} must be >= 0, got {value}")
        if sum(self.as_dict().values()) <= 0:
            raise ConfigError("ODT feature weights must not all be zero")

    def as_dict(self) -> dict[str, float]:
        return {name: float(getattr(self, name)) for name in FEATURES}


#: The profile features that carry a weight in s_local, in reporting order (the fields' order).
FEATURES: tuple[str, ...] = tuple(item.name for item in fields(FeatureWeights))


DEFAULT_NEUTRAL_MESSAGE = (
    "your previous SQL has the expected clause structure, but its result does not match. "
    "Check literal values, string case and value formats (dates, numbers, units)."
)
DEFAULT_FALLBACK_MESSAGE = (
    "your previous SQL could not be analysed. First fix syntax errors and make sure every table "
    "and column you use exists in the schema."
)


@dataclass(frozen=True, slots=True)
class OdtConfig:
    """Weights, thresholds and messages of the Oracle-guided Diagnostic Tree.

    ``thresholds`` maps a tag name to the similarity below which it fires; tags not listed fire
    below :attr:`default_threshold` (1.0: any mismatch).
    """

    weights: FeatureWeights = field(default_factory=FeatureWeights)
    alpha: float = 0.70
    set_op_weight: float = 0.30
    default_threshold: float = 1.0
    thresholds: Mapping[str, float] = field(default_factory=dict)
    neutral_message: str = DEFAULT_NEUTRAL_MESSAGE
    fallback_message: str = DEFAULT_FALLBACK_MESSAGE
    db_engine: str = "SQLite"
    dialect: str = "sqlite"

    def __post_init__(self) -> None:
        for name in ("alpha", "set_op_weight", "default_threshold"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"OdtConfig.{name} must be in [0, 1], got {value}")
        for tag, value in self.thresholds.items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"threshold of {tag} must be in [0, 1], got {value}")

    def threshold(self, tag: str) -> float:
        return self.thresholds.get(tag, self.default_threshold)


#: Tags the paper's Appendix G never prints although its turns differ there (docs/odt.md#the-case-study-
#: beside-the-paper): a threshold of 0 silences a tag (a similarity is never below 0).
_PAPER_SILENT = ("JOIN_REDUNDANT", "HAVING_MISSING", "HAVING_REDUNDANT", "HAVING_ERROR")

#: Named threshold profiles. ``paper-case-study`` reproduces the tag sets printed in the paper's
#: Appendix G (turn 1: JOIN_KEY_MISMATCH, FROM_OR_JOIN_TABLE_MISMATCH, SELECT_ERROR, GROUP_BY_ERROR;
#: turn 2: JOIN_KEY_MISMATCH, FROM_OR_JOIN_TABLE_MISMATCH); scores are the default's.
PROFILES: Mapping[str, OdtConfig] = {
    "default": OdtConfig(),
    "paper-case-study": OdtConfig(thresholds=dict.fromkeys(_PAPER_SILENT, 0.0)),
}
