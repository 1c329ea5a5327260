"""BIRD's own metrics, as its evaluators compute them (pure functions; docs/evaluation.md#bird-metrics).

Read from BIRD Mini-Dev's evaluation scripts (github.com/bird-bench/mini_dev, ``evaluation/``:
``evaluation_ex.py``, ``evaluation_f1.py``, ``evaluation_ves.py``); tests/evaluation/test_bird_agreement.py
runs those scripts (vendored in tests/fixtures/bird_eval/) beside these functions.

- EX: ``set(pred_rows) == set(gold_rows)`` (the ``bird`` preset), averaged per difficulty over every
  question, a failing gold counting as 0.
- Soft-F1 (Mini-Dev): rows de-duplicated in order, the i-th predicted row paired with the i-th gold
  row, each pair scored by the share of values found in the other row.
- R-VES: for a correct answer, the mean over repeated timings of gold time / predicted time (outliers
  beyond 3 standard deviations dropped) is mapped to a reward bucket; the score is the mean of
  sqrt(reward). Timings depend on the machine and its load: R-VES is always reported as such.

>>> soft_f1([("Apple", 325), ("Orange", None), ("Banana", 119)], [(325, "Apple"), (191, "Orange"), (None, "Banana")])
0.6666666666666666
>>> [ves_reward(r) for r in (0.0, 0.1, 0.3, 0.7, 1.5, 2.0)]
[0.0, 0.25, 0.5, 0.75, 1.0, 1.25]
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

#: BIRD's difficulty levels, in its order; ``total`` is every question.
BIRD_LEVELS: tuple[str, ...] = ("simple", "moderate", "challenging")
#: R-VES reward buckets: (lowest time ratio, reward), highest first; below the last: 0.25.
VES_BUCKETS: tuple[tuple[float, float], ...] = ((2.0, 1.25), (1.0, 1.0), (0.5, 0.75), (0.25, 0.5))
VES_FLOOR_REWARD = 0.25
#: BIRD's default number of timing repeats (``iterate_num`` in evaluation_ves.py).
BIRD_VES_REPEATS = 100

Row = Sequence[Hashable]


def _row_match(pred_row: Row, gold_row: Row) -> tuple[float, float, float]:
    """Mini-Dev's ``calculate_row_match``: shares (of the gold row's width) of predicted values found
    in the gold row, predicted values not in it, and gold values not in the predicted row."""
    width = len(gold_row)
    matches = sum(value in gold_row for value in pred_row)
    pred_only = len(pred_row) - matches
    gold_only = sum(value not in pred_row for value in gold_row)
    return matches / width, pred_only / width, gold_only / width


def soft_f1(pred_rows: Sequence[Row], gold_rows: Sequence[Row]) -> float:
    """Mini-Dev's ``calculate_f1_score`` of two fetched results (rows in the order the database gave
    them). Both empty: 1.0. A zero-width gold row divides by zero in BIRD's code (the question then
    scores 0); here too."""
    if not pred_rows and not gold_rows:
        return 1.0
    pred = list(dict.fromkeys(tuple(r) for r in pred_rows))
    gold = list(dict.fromkeys(tuple(r) for r in gold_rows))
    matched: list[float] = []
    pred_only: list[float] = []
    gold_only: list[float] = []
    for i, gold_row in enumerate(gold):
        if i >= len(pred):
            matched.append(0)
            gold_only.append(1)
            continue
        if not gold_row:
            return 0.0
        m, p, g = _row_match(pred[i], gold_row)
        matched.append(m)
        pred_only.append(p)
        gold_only.append(g)
    for _ in range(len(pred) - len(gold)):
        matched.append(0)
        pred_only.append(1)
        gold_only.append(0)
    tp, fp, fn = sum(matched), sum(pred_only), sum(gold_only)
    precision = tp / (tp + fp) if tp + fp > 0 else 0
    recall = tp / (tp + fn) if tp + fn > 0 else 0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def drop_outliers(values: Sequence[float]) -> list[float]:
    """BIRD's ``clean_abnormal``: the values strictly within mean ± 3 population standard deviations
    (all of them equal: none, as in BIRD)."""
    if not values:
        return []
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return [v for v in values if mean - 3 * std < v < mean + 3 * std]


def time_ratio(ratios: Sequence[float]) -> float:
    """The mean of gold time / predicted time over the repeats, outliers dropped; 0.0 when nothing is
    left (BIRD's code divides by zero there, and the question's reward is 0)."""
    kept = drop_outliers(ratios)
    return sum(kept) / len(kept) if kept else 0.0  # sum(), as BIRD's code (the same float)


def ves_reward(ratio: float) -> float:
    """BIRD's reward bucket of a time ratio (0 for a wrong answer, whose ratio is 0)."""
    if ratio == 0:
        return 0.0
    return next((reward for lowest, reward in VES_BUCKETS if ratio >= lowest), VES_FLOOR_REWARD)


def ves_score(rewards: Sequence[float]) -> float | None:
    """``compute_ves`` as a fraction: the mean of sqrt(reward) (BIRD prints it times 100)."""
    return math.fsum(math.sqrt(r) for r in rewards) / len(rewards) if rewards else None
