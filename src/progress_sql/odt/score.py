"""Structural scoring and tag emission: compare a predicted ODT with the gold ODT; the formulas:
docs/odt.md#pipeline, step 5.

>>> from progress_sql.odt.build import build_odt
>>> result = compare_trees(build_odt("SELECT a FROM t"), build_odt("SELECT a FROM t WHERE b = 1"))
>>> round(result.score, 4), sorted(result.tags)
(0.8357, ['WHERE_MISSING'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from progress_sql.odt.build import QUERY_KINDS, OdtNode
from progress_sql.odt.config import FEATURES, OdtConfig
from progress_sql.odt.profile import SelectProfile
from progress_sql.odt.tags import LOCAL_RULES
from progress_sql.sql.lexical import jaccard

_SET_FEATURES = ("select", "tables", "joins", "where", "group_by", "having", "order_by")
_COUNT_FEATURES = ("join_count", "item_count")
_FLAG_FEATURES = FEATURES[len(_SET_FEATURES) + len(_COUNT_FEATURES) :]

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
    """Score and tags of one predicted node against one gold node (subtrees included)."""

    score: float
    tags: frozenset[str]
    features: Mapping[str, float] = field(default_factory=dict)


def num_sim(pred: int, gold: int) -> float:
    """NumSim(a, b) = 1 - min(1, |a - b| / max(1, b)), with b the gold count.

    >>> num_sim(2, 2), num_sim(3, 2), num_sim(0, 4)
    (1.0, 0.5, 0.0)
    """
    return 1.0 - min(1.0, abs(pred - gold) / max(1, gold))


def feature_similarities(pred: SelectProfile, gold: SelectProfile) -> dict[str, float]:
    """Per-feature similarity of two SELECT profiles, keyed as :data:`FEATURES`."""
    sims = {name: jaccard(getattr(pred, name), getattr(gold, name)) for name in _SET_FEATURES}
    sims.update({name: num_sim(getattr(pred, name), getattr(gold, name)) for name in _COUNT_FEATURES})
    sims.update({name: float(getattr(pred, name) == getattr(gold, name)) for name in _FLAG_FEATURES})
    return sims


def _compatible(pred: OdtNode, gold: OdtNode) -> bool:
    if pred.kind in QUERY_KINDS and gold.kind in QUERY_KINDS:
        return True
    return pred.kind == gold.kind and (pred.kind != "CTE" or pred.label == gold.label)


class _Comparer:
    """Memoized recursive comparison of one predicted tree with one gold tree."""

    def __init__(self, config: OdtConfig) -> None:
        self.config = config
        weights = config.weights.as_dict()
        self.weights = weights
        self.weight_total = sum(weights.values())
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
        if pred.kind in ("SUBQUERY", "CTE"):  # one query child each
            return self.compare(pred.children[0], gold.children[0])
        score, tags = self._match(pred.children, gold.children)
        return Comparison(score, tags)

    def _select(self, pred: OdtNode, gold: OdtNode) -> Comparison:
        assert pred.profile is not None
        assert gold.profile is not None
        sims = feature_similarities(pred.profile, gold.profile)
        local = sum(self.weights[name] * sims[name] for name in FEATURES) / self.weight_total
        tags = {
            rule.tag
            for rule in LOCAL_RULES
            if rule.applies(pred.profile, gold.profile)
            and rule.similarity(pred.profile, gold.profile, sims) < self.config.threshold(rule.tag)
        }
        if not pred.children and not gold.children:
            return Comparison(local, frozenset(tags), sims)
        child_score, child_tags = self._match(pred.children, gold.children)
        alpha = self.config.alpha
        return Comparison(alpha * local + (1 - alpha) * child_score, frozenset(tags | child_tags), sims)

    def _set_op(self, pred: OdtNode, gold: OdtNode) -> Comparison:
        # EXCEPT is not commutative: its arms pair up by position, not by best score.
        ordered = pred.label == gold.label == "except"
        child_score, tags = self._match(pred.children, gold.children, ordered=ordered)
        pred_arms = sum(child.kind in QUERY_KINDS for child in pred.children)
        gold_arms = sum(child.kind in QUERY_KINDS for child in gold.children)
        op_sim = float(pred.label == gold.label and pred_arms == gold_arms)
        order_sim = jaccard(pred.order_by, gold.order_by)
        limit_sim = float(pred.has_limit == gold.has_limit)
        threshold = self.config.threshold
        local_tags = {
            "SET_OP_MISMATCH": op_sim < threshold("SET_OP_MISMATCH"),
            "ORDER_BY_MISSING": bool(gold.order_by) and not pred.order_by,
            "ORDER_BY_REDUNDANT": bool(pred.order_by) and not gold.order_by,
            "ORDER_BY_ERROR": bool(pred.order_by and gold.order_by) and order_sim < threshold("ORDER_BY_ERROR"),
            "LIMIT_MISMATCH": limit_sim < threshold("LIMIT_MISMATCH"),
        }
        tags |= {tag for tag, fired in local_tags.items() if fired}
        # The set operation's own clauses (operator and arms, ORDER BY, LIMIT) form its local term.
        weight = self.config.set_op_weight
        return Comparison(weight * op_sim * order_sim * limit_sim + (1 - weight) * child_score, tags)

    def _match(
        self, preds: tuple[OdtNode, ...], golds: tuple[OdtNode, ...], *, ordered: bool = False
    ) -> tuple[float, frozenset[str]]:
        """Greedy child matching: each gold child takes the best-scoring unmatched compatible one
        (with ``ordered``, only the predicted child at the same position is a candidate)."""
        used: set[int] = set()
        total = 0.0
        tags: set[str] = set()
        for gold_index, gold in enumerate(golds):
            best_index, best = -1, None
            for index, pred in enumerate(preds):
                if index in used or not _compatible(pred, gold) or (ordered and index != gold_index):
                    continue
                candidate = self.compare(pred, gold)
                if best is None or candidate.score > best.score:
                    best_index, best = index, candidate
            if best is None:
                tags.add(_MISSING[gold.kind])
                continue
            used.add(best_index)
            total += best.score
            tags |= best.tags
            error_tag = _ERROR.get(gold.kind)
            if error_tag is not None and best.score < self.config.threshold(error_tag):
                tags.add(error_tag)
        tags.update(_REDUNDANT[pred.kind] for index, pred in enumerate(preds) if index not in used)
        denominator = max(len(preds), len(golds))
        return (total / denominator if denominator else 1.0), frozenset(tags)


def _as_set_op(node: OdtNode) -> OdtNode:
    """A SELECT seen as the set operation ``none`` with a single arm."""
    return node if node.kind == "SET_OP" else OdtNode("SET_OP", "none", children=(node,))


def compare_trees(pred: OdtNode, gold: OdtNode, config: OdtConfig | None = None) -> Comparison:
    """Compare two ROOT nodes; ``features`` holds the main SELECT pair's similarities when both are SELECTs."""
    comparer = _Comparer(config or OdtConfig())
    result = comparer.compare(pred, gold)
    pred_main, gold_main = pred.children[-1], gold.children[-1]
    main = comparer.memo.get((id(pred_main), id(gold_main)))
    features = main.features if main is not None else {}
    return Comparison(min(1.0, max(0.0, result.score)), result.tags, features)
