"""Structural scoring and tag emission: compare a predicted ODT with the gold ODT; the formulas:
docs/odt.md#pipeline, step 5.

>>> from progress_sql.odt.build import build_odt
>>> result = compare_trees(build_odt("SELECT a FROM t"), build_odt("SELECT a FROM t WHERE b = 1"))
>>> round(result.score, 4), sorted(map(str, result.findings))
(0.8357, ['WHERE_MISSING'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from progress_sql.odt.build import QUERY_KINDS, OdtNode
from progress_sql.odt.config import FEATURES, OdtConfig
from progress_sql.odt.profile import SelectProfile
from progress_sql.odt.tags import LOCAL_RULES, Applies, FeatureSimilarity, Finding, Similarity
from progress_sql.sql.lexical import jaccard

_SET_FEATURES = ("select", "tables", "joins", "where", "group_by", "having", "order_by")
_COUNT_FEATURES = ("join_count", "item_count")
_FLAG_FEATURES = ("has_where", "has_group_by", "has_having", "has_order_by", "has_limit", "has_aggregation", "distinct")
# feature_similarities names each feature in this order
assert (*_SET_FEATURES, *_COUNT_FEATURES, *_FLAG_FEATURES) == FEATURES
_read_sets = attrgetter(*_SET_FEATURES)
_read_counts = attrgetter(*_COUNT_FEATURES)
_read_flags = attrgetter(*_FLAG_FEATURES)
#: The similarities :func:`feature_similarities` adds to :data:`FEATURES` for the tags, in its order.
REFINEMENTS = (
    "select_items",
    "select_order",
    "join_keys",
    "join_type",
    "order_keys",
    "nulls_order",
    "limit_presence",
    "limit_value",
    "offset",
)

_MISSING = {
    "SUBQUERY": "SUBQUERY_MISSING",
    "CTE": "CTE_MISSING",
    "SELECT": "SET_OP_MISMATCH",
    "SET_OP": "SET_OP_MISMATCH",
}
_REDUNDANT = {
    "SUBQUERY": "SUBQUERY_REDUNDANT",
    "CTE": "CTE_REDUNDANT",
    "SELECT": "SET_OP_MISMATCH",
    "SET_OP": "SET_OP_MISMATCH",
}
_ERROR = {"SUBQUERY": "SUBQUERY_ERROR", "CTE": "CTE_ERROR"}


@dataclass(frozen=True, slots=True)
class Comparison:
    """Score and findings of one predicted node against one gold node (subtrees included; locations
    are relative to the compared node)."""

    score: float
    findings: frozenset[Finding]
    features: Mapping[str, float] = field(default_factory=dict)

    @property
    def tags(self) -> frozenset[str]:
        """The tag codes, wherever they were found."""
        return frozenset(finding.tag for finding in self.findings)


def num_sim(pred: int, gold: int) -> float:
    """NumSim(a, b) = 1 - min(1, |a - b| / max(1, b)), with b the gold count.

    >>> num_sim(2, 2), num_sim(3, 2), num_sim(0, 4)
    (1.0, 0.5, 0.0)
    """
    return 1.0 - min(1.0, abs(pred - gold) / max(1, gold))


def common_order(pred: tuple[str, ...], gold: tuple[str, ...]) -> float:
    """1.0 when the items both lists hold come in the same order, else 0.0.

    >>> common_order(("a", "b", "c"), ("a", "c")), common_order(("b", "a"), ("a", "b"))
    (1.0, 0.0)
    """
    shared = set(pred) & set(gold)
    pred_shared = [item for item in dict.fromkeys(pred) if item in shared]
    gold_shared = [item for item in dict.fromkeys(gold) if item in shared]
    return float(pred_shared == gold_shared)


def limit_similarity(pred: tuple[str | None, str | None], gold: tuple[str | None, str | None]) -> float:
    """LIMIT and OFFSET: 1 the same, 0.5 both limit with another count or offset, 0 one side only."""
    if pred == gold:
        return 1.0
    return 0.5 if (pred[0] is None) == (gold[0] is None) else 0.0


def feature_similarities(pred: SelectProfile, gold: SelectProfile, config: OdtConfig | None = None) -> dict[str, float]:
    """Per-feature similarity of two SELECT profiles, keyed as :data:`FEATURES`, plus the refinements
    the tags read: ``select_items``, ``select_order``, ``join_keys``, ``join_type``, ``order_keys``,
    ``nulls_order``, ``limit_presence``, ``limit_value`` and ``offset``.

    A refinement weighs in through its clause's weight (``select`` = items x order factor, ``joins``
    = keys x type, ``order_by`` = keys x NULLs placement, ``has_limit`` graded by count and offset),
    so a pair that agrees on it scores as before it was profiled. A refinement ``config`` switches off
    (:class:`OdtConfig` ``select_order``, ``join_type``, ``nulls_order``, ``limit_values``) is 1.0, and
    ``has_limit`` is then the LIMIT presence flag alone.
    """
    config = config or _DEFAULT_CONFIG
    # Most features agree: an equal pair is 1.0 under every measure (Jaccard, NumSim, order), so the
    # measure runs only where they differ; the fields are read in one C call per group, the values
    # kept in locals and the mapping built once, in FEATURES then REFINEMENTS order.
    select, tables, joins, where, group_by, having, order_by = [
        1.0 if a == b else jaccard(a, b) for a, b in zip(_read_sets(pred), _read_sets(gold), strict=True)
    ]
    join_count, item_count = [
        1.0 if a == b else num_sim(a, b) for a, b in zip(_read_counts(pred), _read_counts(gold), strict=True)
    ]
    has_where, has_group_by, has_having, has_order_by, has_limit, has_aggregation, distinct = [
        1.0 if a == b else 0.0 for a, b in zip(_read_flags(pred), _read_flags(gold), strict=True)
    ]
    free = pred.projection_free or gold.projection_free
    if free:  # EXISTS (SELECT 1 ...): the projection is moot
        select = item_count = distinct = has_aggregation = 1.0
    select_items = select
    same_order = free or not config.select_order or pred.select_order == gold.select_order
    select_order = 1.0 if same_order else common_order(pred.select_order, gold.select_order)
    select *= 0.5 + 0.5 * select_order
    join_keys = joins
    same_types = not config.join_type or pred.join_types == gold.join_types
    join_type = 1.0 if same_types else jaccard(pred.join_types, gold.join_types)
    joins *= join_type
    order_keys = order_by
    same_nulls = not config.nulls_order or pred.order_nulls == gold.order_nulls
    nulls_order = 1.0 if same_nulls else jaccard(pred.order_nulls, gold.order_nulls)
    order_by *= nulls_order
    limit_presence = has_limit
    if not config.limit_values:  # LIMIT is the presence flag alone (has_limit as read)
        limit_value = offset = 1.0
    else:
        limit_value = 1.0 if pred.limit == gold.limit else 0.0
        offset = 1.0 if pred.offset == gold.offset else 0.0
        has_limit = limit_similarity((pred.limit, pred.offset), (gold.limit, gold.offset))
    return {
        "select": select,
        "tables": tables,
        "joins": joins,
        "where": where,
        "group_by": group_by,
        "having": having,
        "order_by": order_by,
        "join_count": join_count,
        "item_count": item_count,
        "has_where": has_where,
        "has_group_by": has_group_by,
        "has_having": has_having,
        "has_order_by": has_order_by,
        "has_limit": has_limit,
        "has_aggregation": has_aggregation,
        "distinct": distinct,
        "select_items": select_items,
        "select_order": select_order,
        "join_keys": join_keys,
        "join_type": join_type,
        "order_keys": order_keys,
        "nulls_order": nulls_order,
        "limit_presence": limit_presence,
        "limit_value": limit_value,
        "offset": offset,
    }


_DEFAULT_CONFIG = OdtConfig()
_NESTED_KINDS = frozenset({"SUBQUERY", "CTE"})


def _compatible(pred: OdtNode, gold: OdtNode, inline_ctes: bool = True) -> bool:
    # A CTE is scored where it is read, so it pairs with a derived table or subquery as with a CTE;
    # not inlined, a CTE pairs with the CTE of its name only (Appendix D).
    if pred.kind in QUERY_KINDS and gold.kind in QUERY_KINDS:
        return True
    if not inline_ctes and "CTE" in (pred.kind, gold.kind):
        return pred.kind == gold.kind and pred.label == gold.label
    return pred.kind in _NESTED_KINDS and gold.kind in _NESTED_KINDS


@dataclass(frozen=True, slots=True)
class _Settings:
    """What a comparison reads from an :class:`OdtConfig`, derived once per config object."""

    config: OdtConfig
    weights: tuple[tuple[str, float], ...]
    weight_total: float
    #: Each local rule as (its finding, the feature its similarity reads or None, its similarity, when
    #: it applies, the threshold of its tag); the finding is built once (it is a value).
    rules: tuple[tuple[Finding, str | None, Similarity, Applies, float], ...]
    #: The similarities of two identical profiles (every feature 1.0) and their local score.
    identical: Mapping[str, float]
    identical_local: float


#: Settings per config object, keyed by identity (the entry keeps the config alive; a handful of
#: configs exist per process: the defaults and the named profiles).
_SETTINGS: dict[int, _Settings] = {}
_MAX_SETTINGS = 32


def _settings(config: OdtConfig) -> _Settings:
    found = _SETTINGS.get(id(config))
    if found is not None and found.config is config:
        return found
    weights = tuple(config.weights.as_dict().items())
    weight_total = sum(weight for _, weight in weights)
    identical = dict.fromkeys((*FEATURES, *REFINEMENTS), 1.0)
    settings = _Settings(
        config,
        weights,
        weight_total,
        tuple(
            (
                Finding(rule.tag),
                rule.similarity.name if isinstance(rule.similarity, FeatureSimilarity) else None,
                rule.similarity,
                rule.applies,
                config.threshold(rule.tag),
            )
            for rule in LOCAL_RULES
        ),
        identical,
        _local_score(weights, weight_total, identical),
    )
    if len(_SETTINGS) >= _MAX_SETTINGS:
        _SETTINGS.clear()
    _SETTINGS[id(config)] = settings
    return settings


def _local_score(weights: tuple[tuple[str, float], ...], total: float, sims: Mapping[str, float]) -> float:
    return sum([weight * sims[name] for name, weight in weights]) / total


class _Comparer:
    """Memoized recursive comparison of one predicted tree with one gold tree."""

    def __init__(self, config: OdtConfig) -> None:
        self.config = config
        self.settings = _settings(config)
        self.memo: dict[tuple[int, int], Comparison] = {}

    def compare(self, pred: OdtNode, gold: OdtNode) -> Comparison:
        key = (id(pred), id(gold))
        result = self.memo.get(key)
        if result is None:
            result = self._compare(pred, gold)
            self.memo[key] = result
        return result

    def _compare(self, pred: OdtNode, gold: OdtNode) -> Comparison:
        if pred.kind == "SELECT" and gold.kind == "SELECT":
            return self._select(pred, gold)
        if pred.kind in QUERY_KINDS:
            return self._set_op(_as_set_op(pred), _as_set_op(gold))
        if pred.kind in _NESTED_KINDS:  # one query child each
            return self.compare(pred.children[0], gold.children[0])
        score, findings = self._match(pred.children, gold.children)
        return Comparison(score, findings)

    def _select(self, pred: OdtNode, gold: OdtNode) -> Comparison:
        assert pred.profile is not None
        assert gold.profile is not None
        settings = self.settings
        # Identical profiles (the SELECT sets first: they differ most often): every similarity is 1.0,
        # so no local rule fires.
        if pred.profile.select == gold.profile.select and pred.profile == gold.profile:
            sims: dict[str, float] = dict(settings.identical)
            local = settings.identical_local
            findings: set[Finding] = set()
        else:
            pred_profile, gold_profile = pred.profile, gold.profile
            sims = feature_similarities(pred_profile, gold_profile, self.config)
            local = _local_score(settings.weights, settings.weight_total, sims)
            # The similarity first: it is usually 1.0, and then ``applies`` need not run (both are pure).
            findings = set()
            for finding, feature, similarity, applies, threshold in settings.rules:
                value = sims[feature] if feature is not None else similarity(pred_profile, gold_profile, sims)
                if value < threshold and applies(pred_profile, gold_profile):
                    findings.add(finding)
        if not pred.children and not gold.children:
            return Comparison(local, frozenset(findings), sims)
        child_score, child_findings = self._match(pred.children, gold.children)
        alpha = self.config.alpha
        return Comparison(alpha * local + (1 - alpha) * child_score, frozenset(findings | child_findings), sims)

    def _set_op(self, pred: OdtNode, gold: OdtNode) -> Comparison:
        # EXCEPT is not commutative: its arms pair up by position, not by best score.
        ordered = pred.label == gold.label == "except"
        arm_step = pred.label.replace(" ", "-") if pred.label != "none" else ""
        child_score, findings = self._match(pred.children, gold.children, ordered=ordered, arm_step=arm_step)
        pred_arms = sum(child.kind in QUERY_KINDS for child in pred.children)
        gold_arms = sum(child.kind in QUERY_KINDS for child in gold.children)
        op_sim = float(pred.label == gold.label and pred_arms == gold_arms)
        config = self.config
        order_keys = jaccard(pred.order_by, gold.order_by)
        nulls = jaccard(pred.order_nulls, gold.order_nulls) if config.nulls_order else 1.0
        order_sim = order_keys * nulls
        if config.limit_values:
            limit_sim = limit_similarity((pred.limit, pred.offset), (gold.limit, gold.offset))
        else:
            limit_sim = float(pred.has_limit == gold.has_limit)
        threshold = config.threshold
        both_order = bool(pred.order_by and gold.order_by)
        local_tags = {
            "SET_OP_MISMATCH": op_sim < threshold("SET_OP_MISMATCH"),
            "ORDER_BY_MISSING": bool(gold.order_by) and not pred.order_by,
            "ORDER_BY_REDUNDANT": bool(pred.order_by) and not gold.order_by,
            "ORDER_BY_ERROR": both_order and order_keys < threshold("ORDER_BY_ERROR"),
            "NULLS_ORDER_MISMATCH": both_order and nulls < threshold("NULLS_ORDER_MISMATCH"),
            "LIMIT_MISMATCH": float(pred.has_limit == gold.has_limit) < threshold("LIMIT_MISMATCH"),
            "LIMIT_VALUE_MISMATCH": config.limit_values
            and pred.has_limit
            and gold.has_limit
            and float(pred.limit == gold.limit) < threshold("LIMIT_VALUE_MISMATCH"),
            "OFFSET_MISMATCH": config.limit_values and float(pred.offset == gold.offset) < threshold("OFFSET_MISMATCH"),
        }
        findings |= {Finding(tag) for tag, fired in local_tags.items() if fired}
        # The set operation's own clauses (operator and arms, ORDER BY, LIMIT) form its local term.
        weight = self.config.set_op_weight
        return Comparison(weight * op_sim * order_sim * limit_sim + (1 - weight) * child_score, findings)

    def _match(
        self,
        preds: tuple[OdtNode, ...],
        golds: tuple[OdtNode, ...],
        *,
        ordered: bool = False,
        arm_step: str = "",
    ) -> tuple[float, frozenset[Finding]]:
        """Greedy child matching: each gold child takes the best-scoring unmatched compatible one
        (with ``ordered``, only the predicted child at the same position is a candidate). Findings
        of a matched child are located at the predicted child (``arm_step`` names set-operation arms)."""

        def step(node: OdtNode, index: int) -> str:
            if node.kind in QUERY_KINDS:
                return f"{arm_step}#{index + 1}" if arm_step else ""
            return node.step

        used: set[int] = set()
        inline = self.config.inline_ctes
        total = 0.0
        findings: set[Finding] = set()
        for gold_index, gold in enumerate(golds):
            best_index, best = -1, None
            for index, pred in enumerate(preds):
                if index in used or not _compatible(pred, gold, inline) or (ordered and index != gold_index):
                    continue
                candidate = self.compare(pred, gold)
                if best is None or candidate.score > best.score:
                    best_index, best = index, candidate
            if best is None:
                findings.add(Finding(_MISSING[gold.kind], (gold.step,) if gold.step else ()))
                continue
            used.add(best_index)
            total += best.score
            pred = preds[best_index]
            where = step(pred, best_index)
            findings.update(finding.within(where) for finding in best.findings)
            error_tag = _ERROR.get(pred.kind)
            if error_tag is not None and best.score < self.config.threshold(error_tag):
                findings.add(Finding(error_tag, (where,)))
        findings.update(
            Finding(_REDUNDANT[pred.kind], (pred.step,) if pred.step else ())
            for index, pred in enumerate(preds)
            if index not in used
        )
        denominator = max(len(preds), len(golds))
        return (total / denominator if denominator else 1.0), frozenset(findings)


def _as_set_op(node: OdtNode) -> OdtNode:
    """A SELECT seen as the set operation ``none`` with a single arm."""
    return node if node.kind == "SET_OP" else OdtNode("SET_OP", "none", children=(node,))


def compare_trees(pred: OdtNode, gold: OdtNode, config: OdtConfig | None = None) -> Comparison:
    """Compare two ROOT nodes; ``features`` holds the main SELECT pair's similarities when both are SELECTs."""
    comparer = _Comparer(config or _DEFAULT_CONFIG)
    pred_main, gold_main = pred.children[-1], gold.children[-1]
    if (
        pred.kind == gold.kind == "ROOT"
        and len(pred.children) == len(gold.children) == 1
        and pred_main.kind in QUERY_KINDS
        and gold_main.kind in QUERY_KINDS
    ):
        # Two ROOTs with one query each (every built tree): matching the one pair of children finds
        # that pair and locates nothing further (a query's step is ''), so compare the queries directly.
        result = comparer.compare(pred_main, gold_main)
        features = result.features
    else:
        result = comparer.compare(pred, gold)
        main = comparer.memo.get((id(pred_main), id(gold_main)))
        features = main.features if main is not None else {}
    return Comparison(min(1.0, max(0.0, result.score)), result.findings, features)
