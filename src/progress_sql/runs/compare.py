"""Two evaluation run folders compared: headline metrics, per-level EX, and the examples whose verdict
changed (``progress-sql compare-runs`` prints it; ``view`` shows it); docs/evaluation.md#comparing-runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from progress_sql.runs.read import read_eval

HEADLINE: tuple[tuple[str, str], ...] = (
    ("execution_accuracy", "EX"),
    ("test_suite_accuracy", "TS"),
    ("first_sample_accuracy", "first-sample EX"),
    ("valid_sql_rate", "valid SQL"),
    ("format_rate", "format"),
)


#: BIRD's metrics (``metrics.bird``), compared on their totals.
BIRD_HEADLINE: tuple[tuple[str, str], ...] = (("ex", "BIRD EX"), ("soft_f1", "Soft-F1"), ("r_ves", "R-VES"))


def compare(a: Path, b: Path) -> dict[str, Any]:
    """The comparison of two run folders as a JSON-ready dict (DatasetError: not an eval run folder)."""
    run_a, run_b = read_eval(a), read_eval(b)
    samples_a, samples_b = run_a.samples, run_b.samples
    metrics_a, metrics_b = run_a.summary.metrics, run_b.summary.metrics

    def pair(x: Any, y: Any) -> dict[str, Any]:
        delta = y - x if isinstance(x, (int, float)) and isinstance(y, (int, float)) else None
        return {"a": x, "b": y, "delta": delta}

    headline = {key: pair(metrics_a.get(key), metrics_b.get(key)) for key, _ in HEADLINE}
    for k in sorted(set(metrics_a.get("pass_at_k", {})) | set(metrics_b.get("pass_at_k", {})), key=int):
        headline[f"pass@{k}"] = pair(metrics_a.get("pass_at_k", {}).get(k), metrics_b.get("pass_at_k", {}).get(k))
    headline["odt_average"] = pair(metrics_a["odt"]["average"], metrics_b["odt"]["average"])
    for key, label in BIRD_HEADLINE:  # BIRD's totals, when either run has them
        bird_a, bird_b = metrics_a.get("bird") or {}, metrics_b.get("bird") or {}
        if bird_a.get(key) or bird_b.get(key):
            headline[label] = pair((bird_a.get(key) or {}).get("total"), (bird_b.get(key) or {}).get("total"))
    levels = list(dict.fromkeys([*metrics_a.get("by_level", {}), *metrics_b.get("by_level", {})]))
    by_level = {
        level: pair(
            metrics_a.get("by_level", {}).get(level, {}).get("execution_accuracy"),
            metrics_b.get("by_level", {}).get(level, {}).get("execution_accuracy"),
        )
        for level in levels
    }
    changed = []
    for index in sorted(set(samples_a) & set(samples_b)):
        x, y = samples_a[index], samples_b[index]
        if x["status"] != "scored" or y["status"] != "scored" or x["match"] == y["match"]:
            continue
        changed.append(
            {
                "index": index,
                "db_id": x["db_id"],
                "level": x.get("level"),
                "change": "fixed" if y["match"] else "broken",
                "a": {"verdict": x["verdict"], "sql": x["sql"]},
                "b": {"verdict": y["verdict"], "sql": y["sql"]},
            }
        )
    settings_a, settings_b = run_a.summary.settings, run_b.summary.settings
    return {
        "a": str(a),
        "b": str(b),
        "same_task": settings_a.task == settings_b.task,
        "same_preset": settings_a.preset == settings_b.preset,
        "only_in_a": len(set(samples_a) - set(samples_b)),
        "only_in_b": len(set(samples_b) - set(samples_a)),
        "headline": headline,
        "by_level": by_level,
        "fixed": sum(c["change"] == "fixed" for c in changed),
        "broken": sum(c["change"] == "broken" for c in changed),
        "changed": changed,
    }


__all__ = ["BIRD_HEADLINE", "HEADLINE", "compare"]
