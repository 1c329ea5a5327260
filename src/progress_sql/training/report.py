"""The run report: ``report.md``, ``summary.json`` and PNG plots (the paper's Figure 4 and 3(a) views)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from progress_sql.plots import PlottingUnavailableError, accuracy_bars, training_curves
from progress_sql.training.evaluate import EXReport
from progress_sql.training.recipe import RunResult, template_set

CURVES = (
    ("reward", "reward R(Y) (group mean)"),
    ("trajectory/turns_mean", "turns per trajectory"),
    ("completions/mean_length", "response length (model tokens)"),
)
COMPONENTS = (("rewards/fmt/mean", "R_fmt"), ("rewards/exec/mean", "R_exec"), ("rewards/late/mean", "R_late"),
              ("rewards/align/mean", "R_align"))  # fmt: skip


def _window(records: list[dict[str, Any]], key: str, first: bool, size: int = 10) -> float | None:
    values = [float(r[key]) for r in records if key in r]
    if not values:
        return None
    part = values[:size] if first else values[-size:]
    return statistics.fmean(part)


def summary(result: RunResult) -> dict[str, Any]:
    """Every number of the run, for summary.json and docs/benchmarks.md."""
    rl = {}
    for reward, run in result.rl.items():
        rl[reward] = {
            "steps": run.steps,
            "seconds": round(run.seconds, 1),
            "resumed_from": run.resumed_from,
            "reward_first10": _window(run.metrics, "reward", True),
            "reward_last10": _window(run.metrics, "reward", False),
            "frac_reward_zero_std_mean": _window(run.metrics, "frac_reward_zero_std", True, size=10**9),
        }
    return {
        "model": result.config.model,
        "data": result.data_sizes,
        "sft": result.sft,
        "ex_before": {k: v.as_dict() for k, v in result.before.items()},
        "ex_after": {k: v.as_dict() for k, v in result.after.items()},
        "ex_after_compared_reward": {k: v.as_dict() for k, v in result.compare_after.items()},
        "template_ex_before": template_set(result.before).as_dict() if result.before else None,
        "template_ex_after": template_set(result.after).as_dict() if result.after else None,
        "rl": rl,
        "guard": result.guard,
        "seconds": round(result.seconds, 1),
    }


def _row(name: str, before: EXReport, after: EXReport) -> str:
    delta = 100 * (after.ex - before.ex)
    return (
        f"| {name} | {before.n} | {100 * before.ex:.1f} +- {100 * before.standard_error:.1f} | "
        f"{100 * after.ex:.1f} +- {100 * after.standard_error:.1f} | {delta:+.1f} |"
    )


def _sft_line(sft: dict[str, Any]) -> str:
    if not sft:
        return "None (a pretrained model)."
    reused = " (reused from the run folder's checkpoint)" if sft.get("resumed") else ""
    return (
        f"{sft.get('steps')} steps in {sft.get('seconds')} s, final loss {sft.get('final_loss', float('nan')):.4f}"
        f"{reused}; half of the examples show a feedback turn before the final answer."
    )


def write_report(result: RunResult, out: Path) -> Path:
    """Write summary.json, the plots and report.md into ``out``; returns the report's path."""
    data = summary(result)
    (out / "summary.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    plots: list[str] = []
    runs = {reward: run.metrics for reward, run in result.rl.items()}
    try:
        training_curves(runs, CURVES, out / "training_curves.png", "RL training (per step)")
        training_curves({r: m for r, m in runs.items()}, COMPONENTS, out / "reward_components.png", "reward components")
        groups = {
            name: {"before RL": (acc.ex, acc.standard_error, acc.n),
                   "after RL": (result.after[name].ex, result.after[name].standard_error, result.after[name].n)}
            for name, acc in result.before.items()
        }  # fmt: skip
        accuracy_bars(groups, out / "ex_before_after.png", "held-out execution accuracy (greedy, single turn)")
        plots = ["training_curves.png", "reward_components.png", "ex_before_after.png"]
    except PlottingUnavailableError as error:
        plots = [f"(no plots: {error})"]
    config = result.config
    lines = [
        "# progress-sql train: run report",
        "",
        f"Model: `{config.model}`; trainer preset `{config.rl.preset}`; reward `{config.rl.reward}`; "
        f"T = {config.rl.turns}; {config.rl.steps} RL steps of {config.rl.prompts_per_step} prompts x "
        f"{config.rl.generations} samples; seed {config.seed}; {config.threads} thread(s); {data['seconds']} s in all.",
        "",
        "Prompts use the compact profile (no system prompt, no schema, feedback as tag codes): the tiny",
        "from-scratch model learns its two databases' schemas. Real models use the paper's Appendix F prompts.",
        "",
        "## Data",
        "",
        *(f"- {name}: {size}" for name, size in result.data_sizes.items()),
        "",
        "## Supervised warm start",
        "",
        _sft_line(result.sft),
        "",
        "## Execution accuracy before and after RL",
        "",
        "Greedy single-turn decoding, strict comparison; +- is one standard error (sqrt(p(1-p)/n)).",
        "",
        "| held-out set | n | EX before (%) | EX after (%) | change |",
        "|---|---:|---:|---:|---:|",
        *(_row(name, result.before[name], result.after[name]) for name in result.before if name in result.after),
        "",
        "Real Spider questions (`real_test`) are a stretch figure: a model trained from scratch on templates is",
        "not expected to understand free-form English (0-3% in the prototype; docs/training.md).",
        "",
        f"Guard: {result.guard}.",
        "",
        "## RL",
        "",
        *(f"- reward `{reward}`: {values}" for reward, values in data["rl"].items()),
        "",
        *(f"![{p}]({p})" for p in plots),
        "",
    ]
    if result.compare_after:
        lines += [
            f"## Compared reward: `{config.compare_reward}`",
            "",
            "Same data, seed, supervised checkpoint and number of steps; only the reward differs.",
            "",
            "| held-out set | n | EX after, " + config.rl.reward + " | EX after, " + str(config.compare_reward) + " |",
            "|---|---:|---:|---:|",
            *(
                f"| {name} | {acc.n} | {100 * acc.ex:.1f} | {100 * result.compare_after[name].ex:.1f} |"
                for name, acc in result.after.items()
                if name in result.compare_after
            ),
            "",
        ]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
