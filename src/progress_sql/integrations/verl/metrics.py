"""Training-step metrics of Progress-SQL trajectories (no verl import): the reward components, turns per
trajectory, the first correct turn and the rows that could not be scored, from each trajectory's
``extra_fields`` as verl's v1 trainer keeps them (the loop's own keys plus the reward loop's
``reward_extra_info``, :func:`~progress_sql.integrations.verl.reward.compute_score`'s result).
verl 0.9.1 logs ``reward_extra_info`` for validation only; :mod:`.trainer` adds these to every step.

>>> record = {"turn": 1, "sql": "SELECT 1", "format_ok": True, "exec_status": "ok", "match": True,
...           "verdict": "match", "f": 1.0, "f_struct": 1.0, "f_lex": 1.0, "tags": [], "response": "..."}
>>> solved = {TURNS_KEY: [record], STOP_KEY: "match", "reward_extra_info": {"score": 2.0, "late": 1.0}}
>>> unusable = {TURNS_KEY: [], STOP_KEY: "database_error", DATABASE_ERROR_KEY: "database file not found: x",
...             "reward_extra_info": {"score": 0.0, "late": 0.0}}
>>> metrics = step_metrics([solved, unusable])
>>> metrics["progress_sql/reward/score/mean"], metrics["progress_sql/solved/rate"]
(1.0, 1.0)
>>> metrics["progress_sql/database_error/rate"], metrics["progress_sql/stop/database_error/rate"]
(0.5, 0.5)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from statistics import fmean
from typing import Any

from progress_sql.integrations.verl.reward import (
    DATABASE_ERROR_KEY,
    GOLD_ERROR_KEY,
    STOP_KEY,
    STOP_REASONS,
    TRAJECTORY_KEYS,
    TURNS_KEY,
)

#: Every metric name starts with this (verl's own are ``training/...``, ``actor/...``, ``critic/...``).
PREFIX = "progress_sql"
#: Where verl's reward loop puts ``compute_score``'s result (``AgentLoopWorker._compute_score``).
REWARD_INFO_KEY = "reward_extra_info"


def _first_correct_turn(records: Sequence[Mapping[str, Any]]) -> int:
    """k*: the 1-based turn of the first match, 0 when no turn matched."""
    return next((position for position, record in enumerate(records, 1) if record.get("match")), 0)


def _spread(name: str, values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {f"{name}/mean": fmean(values), f"{name}/max": max(values), f"{name}/min": min(values)}


def step_metrics(extra_fields: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The step's metrics over its trajectories (``extra_fields`` of each, padding left out).

    ``reward/<key>/mean``: the reward verl trained on (``score``) and each component; ``turns/*``:
    answers per scored trajectory; ``solved/rate``, ``first_correct_turn/*`` (solved ones) and
    ``solved_at_turn/<k>/rate``: the paper's k*; ``first_turn_f/mean``; ``gold_invalid/rate`` and
    ``database_error/rate``: rows scored 0 because the gold query or the database failed;
    ``stop/<reason>/rate`` for every reason. Rates are over all trajectories, the turn figures over
    the scored ones."""
    if not extra_fields:
        return {}
    count = len(extra_fields)
    metrics: dict[str, float] = {}
    rewards: dict[str, list[float]] = {}
    for fields in extra_fields:
        info = fields.get(REWARD_INFO_KEY) or {}
        for key, value in info.items():
            if key not in TRAJECTORY_KEYS and isinstance(value, Real):
                rewards.setdefault(key, []).append(float(value))
    metrics.update({f"{PREFIX}/reward/{key}/mean": fmean(values) for key, values in sorted(rewards.items())})

    gold_errors = [bool(fields.get(GOLD_ERROR_KEY)) for fields in extra_fields]
    database_errors = [bool(fields.get(DATABASE_ERROR_KEY)) for fields in extra_fields]
    metrics[f"{PREFIX}/gold_invalid/rate"] = sum(gold_errors) / count
    metrics[f"{PREFIX}/database_error/rate"] = sum(database_errors) / count
    stops = [str(fields.get(STOP_KEY, "")) for fields in extra_fields]
    metrics.update({f"{PREFIX}/stop/{reason}/rate": stops.count(reason) / count for reason in STOP_REASONS})

    scored = [
        list(fields.get(TURNS_KEY) or ())
        for fields, gold, database in zip(extra_fields, gold_errors, database_errors, strict=True)
        if not gold and not database
    ]
    if not scored:
        return metrics
    k_stars = [_first_correct_turn(records) for records in scored]
    solved = [k for k in k_stars if k > 0]
    metrics.update(_spread(f"{PREFIX}/turns", [float(len(records)) for records in scored]))
    metrics[f"{PREFIX}/solved/rate"] = len(solved) / len(scored)
    metrics.update(_spread(f"{PREFIX}/first_correct_turn", [float(k) for k in solved]))
    for turn in range(1, max((len(records) for records in scored), default=0) + 1):
        metrics[f"{PREFIX}/solved_at_turn/{turn}/rate"] = k_stars.count(turn) / len(scored)
    first_f = [float(records[0].get("f", 0.0)) for records in scored if records]
    if first_f:
        metrics[f"{PREFIX}/first_turn_f/mean"] = fmean(first_f)
    return metrics
