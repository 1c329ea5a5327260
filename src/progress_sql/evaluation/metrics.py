"""Metrics of an evaluation run, from its per-example records (pure: records in, a dict out); each
key's meaning: docs/evaluation.md#metrics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from progress_sql.data.loaders import problem_kind
from progress_sql.evaluation.analysis import analyze, ratio
from progress_sql.evaluation.bird import BIRD_LEVELS, ves_score
from progress_sql.evaluation.harness import EvalRecord
from progress_sql.evaluation.stats import binomial_se
from progress_sql.evaluation.voting import k_values, pass_at_k
from progress_sql.types import HARDNESS_LEVELS

#: Display order of known difficulty levels (Spider hardness, then BIRD's).
LEVEL_ORDER: tuple[str, ...] = (*HARDNESS_LEVELS, "simple", "moderate", "challenging")
_INVALID_ANSWERS = frozenset({"pred_error", "pred_timeout", "pred_truncated", "no_sql"})


def _block(records: Sequence[EvalRecord]) -> dict[str, Any]:
    scored = [r for r in records if r.status == "scored"]
    matched = sum(r.match for r in scored)
    with_suite = [r for r in scored if r.ts_match is not None]
    invalid = sum(r.status == "gold_invalid" for r in records)
    return {
        "examples": len(records),
        "skipped": sum(r.status == "skipped" for r in records),
        "gold_invalid": invalid,
        "scored": len(scored),
        "matched": matched,
        "execution_accuracy": ratio(matched, len(scored)),
        # the binomial standard error of that share over the scored examples
        "execution_accuracy_se": binomial_se(matched, len(scored)),
        "execution_accuracy_with_invalid": ratio(matched, len(scored) + invalid),
        "ts_scored": len(with_suite),
        "ts_matched": sum(bool(r.ts_match) for r in with_suite),
        "test_suite_accuracy": ratio(sum(bool(r.ts_match) for r in with_suite), len(with_suite)),
        # EX minus TS over the same examples (those with a suite): the share EX accepts and TS rejects.
        "ex_minus_ts": ratio(sum(r.match and not r.ts_match for r in with_suite), len(with_suite)),
    }


def level_order(levels: set[str]) -> list[str]:
    """Known levels in their usual order, then any others alphabetically."""
    return sorted(levels, key=lambda level: (LEVEL_ORDER.index(level) if level in LEVEL_ORDER else 99, level))


def summarize_eval(records: Sequence[EvalRecord]) -> dict[str, Any]:
    """Every metric of a run; see the module docstring."""
    summary = _block(records)
    scored = [r for r in records if r.status == "scored"]
    counts = Counter(r.verdict for r in records)
    summary["verdicts"] = dict(sorted(counts.items()))
    n = max((r.samples for r in scored), default=1)
    summary["samples_per_example"] = n
    summary["valid_sql_rate"] = ratio(sum(r.verdict not in _INVALID_ANSWERS for r in scored), len(scored))
    total_samples = sum(r.samples for r in scored)
    summary["sample_valid_rate"] = ratio(sum(r.valid_samples for r in scored), total_samples)
    known_format = [r for r in scored if r.format_ok_samples is not None]
    summary["format_rate"] = (
        ratio(sum(r.format_ok_samples or 0 for r in known_format), sum(r.samples for r in known_format))
        if known_format and len(known_format) == len(scored)
        else None
    )
    if n > 1:
        summary["first_sample_accuracy"] = ratio(sum(r.first_match for r in scored), len(scored))
    same_n = [r for r in scored if r.samples == n]
    summary["pass_at_k"] = {
        str(k): ratio(sum(pass_at_k(r.samples, r.correct_samples, k) for r in same_n), len(same_n)) for k in k_values(n)
    }
    shares = [r.vote_share for r in scored]
    summary["vote"] = {
        "mean_share": ratio(sum(shares), len(shares)),
        "unanimous": sum(len(r.votes) == 1 and r.valid_samples == r.samples for r in scored),
        "no_valid_sample": sum(not r.votes for r in scored),
    }
    levels = level_order({r.level for r in records if r.level})
    summary["by_level"] = {level: _block([r for r in records if r.level == level]) for level in levels}
    # Read / write / ambiguous (docs/tasks.md), in that order, the kinds present only.
    kinds = [kind for kind in ("read", "write", "ambiguous") if any(r.kind == kind for r in records)]
    summary["by_kind"] = {kind: _block([r for r in records if r.kind == kind]) for kind in kinds}
    summary["odt"] = analyze([r.tags for r in scored])
    if any(r.soft_f1 is not None or r.ves_reward is not None for r in records):
        summary["bird"] = bird_metrics(records)
    summary["skipped_examples"] = _skipped(records)
    summary["gold_invalid_examples"] = [
        {"index": r.index, "db_id": r.db_id, "reason": r.reason} for r in records if r.status == "gold_invalid"
    ]
    return summary


def bird_metrics(records: Sequence[EvalRecord]) -> dict[str, Any]:
    """EX, Soft-F1 and R-VES per BIRD difficulty and in total, as BIRD's evaluators average them:
    over every question whose database is present, a failing gold counting as 0 (fractions; BIRD
    prints them times 100). R-VES is None unless it was measured; ``soft_f1_unavailable`` counts
    answers whose result was truncated (counted as 0)."""
    counted = [r for r in records if r.status in ("scored", "gold_invalid")]
    groups = {level: [r for r in counted if r.difficulty == level] for level in BIRD_LEVELS}
    groups["total"] = counted
    measured = any(r.ves_reward is not None for r in counted)

    def mean(values: list[float]) -> float | None:
        return ratio(sum(values), len(values))

    return {
        "count": {level: len(group) for level, group in groups.items()},
        "ex": {level: mean([float(r.match) for r in group]) for level, group in groups.items()},
        "soft_f1": {level: mean([r.soft_f1 or 0.0 for r in group]) for level, group in groups.items()},
        "r_ves": (
            {level: ves_score([r.ves_reward or 0.0 for r in group]) for level, group in groups.items()}
            if measured
            else None
        ),
        "soft_f1_unavailable": sum(r.soft_f1 is None for r in counted),
    }


def _skipped(records: Sequence[EvalRecord]) -> dict[str, Any]:
    """The examples whose database could not be used: ``by_reason`` counts them per database under each
    kind of problem (``progress_sql.data.loaders.PROBLEM_KINDS``); ``reason`` joins the kinds."""
    skipped = [r for r in records if r.status == "skipped"]
    by_db = Counter(r.db_id for r in skipped)
    by_reason: dict[str, Counter[str]] = {}
    for record in skipped:
        by_reason.setdefault(problem_kind(record.reason or ""), Counter())[record.db_id] += 1
    return {
        "reason": "; ".join(by_reason) if skipped else None,
        "count": len(skipped),
        "by_db_id": dict(sorted(by_db.items())),
        "by_reason": {kind: dict(sorted(dbs.items())) for kind, dbs in by_reason.items()},
        "indices": [r.index for r in skipped],
    }


def notes(metrics: dict[str, Any]) -> list[str]:
    """Sentences that say which examples were left out of the metrics, and why."""
    found = []
    for reason, by_db in metrics["skipped_examples"]["by_reason"].items():
        dbs = ", ".join(f"{db} ({count})" for db, count in by_db.items())
        found.append(
            f"{sum(by_db.values())} examples skipped, {reason} ({dbs}); they are not counted in execution_accuracy"
        )
    if metrics["gold_invalid"]:
        found.append(
            f"{metrics['gold_invalid']} examples have a gold query that failed or timed out; "
            "they are invalid, never a match, and left out of execution_accuracy"
        )
    if metrics["scored"] and metrics["ts_scored"] and metrics["ts_scored"] < metrics["scored"]:
        found.append(
            f"test_suite_accuracy covers the {metrics['ts_scored']} scored examples whose database has suite databases"
        )
    return found
