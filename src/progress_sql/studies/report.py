"""The run folder of ``train``: ``report.md``, ``summary.json``, ``samples.jsonl`` and PNG plots (the
paper's Figure 4 and 3(a) views)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

from progress_sql.evaluation.stats import Accuracy, PairedChange
from progress_sql.plots import PlottingUnavailableError, accuracy_bars, training_curves
from progress_sql.runfolder import RunFolder, RunSummary
from progress_sql.studies.card import write_run_card
from progress_sql.training.recipe import RunResult, heldout_change, template_set

CURVES = (
    ("reward", "reward R(Y) (group mean)"),
    ("trajectory/turns_mean", "turns per trajectory"),
    ("completions/mean_length", "response length (model tokens)"),
    ("groups/zero_variance_share", "share of tied groups (no signal)"),
)
COMPONENTS = (("rewards/fmt/mean", "R_fmt"), ("rewards/exec/mean", "R_exec"), ("rewards/late/mean", "R_late"),
              ("rewards/align/mean", "R_align"))  # fmt: skip


def _window(records: list[dict[str, Any]], key: str, first: bool, size: int = 10) -> float | None:
    values = [float(r[key]) for r in records if key in r]
    if not values:
        return None
    part = values[:size] if first else values[-size:]
    return statistics.fmean(part)


def _heldout(result: RunResult, after_rl: dict[str, Accuracy] | None = None) -> dict[str, Any] | None:
    """The headline: pooled held-out template EX before and after RL (``after_rl``: other weights'
    EX, the last step's) with the paired difference."""
    change = heldout_change(result, after_rl)
    if change is None:
        return None
    before, after = template_set(result.before), template_set(result.after if after_rl is None else after_rl)
    return {
        "sets": [name for name in result.before if name != "real_test"],
        "n": change.n,
        "ex_before": round(change.before, 6),
        "ex_after": round(change.after, 6),
        "se_before": round(before.standard_error, 6),
        "se_after": round(after.standard_error, 6),
        "diff": round(change.difference, 6),
        "se_diff": round(change.se_difference, 6),
        "gained": change.gained,
        "lost": change.lost,
        "significant": change.significant,
    }


def summary(result: RunResult) -> dict[str, Any]:
    """Every number of the run, for summary.json and docs/benchmarks.md (keys in docs/training.md)."""
    rl = {}
    for reward, run in result.rl.items():
        rl[reward] = {
            "steps": run.steps,
            "seconds": round(run.seconds, 1),
            "resumed_from": run.resumed_from,
            "reward_first10": _window(run.metrics, "reward", True),
            "reward_last10": _window(run.metrics, "reward", False),
            "zero_variance_share_mean": _window(run.metrics, "groups/zero_variance_share", True, size=10**9),
            "zero_variance_share": [round(float(r["groups/zero_variance_share"]), 4) for r in run.metrics
                                    if "groups/zero_variance_share" in r],
            "variance_share": {name: _window(run.metrics, f"groups/variance_share/{name}", True, size=10**9)
                               for _, name in ((k, k.split("/")[1]) for k, _ in COMPONENTS)},
        }  # fmt: skip
    detail = {
        name: {"before": result.before_detail[name].as_dict(), "after": result.after_detail[name].as_dict()}
        for name in result.before_detail
        if name in result.after_detail
    }
    return {
        "model": result.config.model,
        "precision": result.precision,
        "data": result.data_sizes,
        "sft": result.sft,
        "heldout": _heldout(result),
        # How the kept RL weights were chosen, and the last step's pooled EX when they are another step's.
        "rl_selection": result.rl_selection,
        "heldout_last_step": _heldout(result, result.last_after) if result.last_after else None,
        "ex_before": {k: v.as_dict() for k, v in result.before.items()},
        "ex_after": {k: v.as_dict() for k, v in result.after.items()},
        "ex_after_compared_reward": {k: v.as_dict() for k, v in result.compare_after.items()},
        "heldout_detail": detail,
        # A warm-started real model: EX before the warm start, and the paired changes from there.
        "ex_before_warm_start": {k: v.as_dict() for k, v in result.base.items()},
        "warm_start_change": _paired_changes(result.base, result.before),
        "warm_start_and_rl_change": _paired_changes(result.base, result.after),
        "template_ex_before": template_set(result.before).as_dict() if result.before else None,
        "template_ex_after": template_set(result.after).as_dict() if result.after else None,
        "rl_data": result.rl_data,
        "rl": rl,
        "guard": result.guard,
        "warnings": result.warnings,
        "seconds": round(result.seconds, 1),
    }


def _precision_line(precision: Mapping[str, Any]) -> str:
    computes = sorted({run.get("compute", "?") for run in precision.get("rl", {}).values()})
    return (
        f"Precision: checkpoint saved as {precision.get('checkpoint_dtype') or 'unknown'}, weights loaded and "
        f"trained as {', '.join(precision.get('weight_dtypes', []))} (the optimizer's master copy), RL computed in "
        f"{', '.join(computes) or 'n/a'}."
    )


def _paired_changes(before: dict[str, Accuracy], after: dict[str, Accuracy]) -> dict[str, Any]:
    """Per set, the paired change from ``before`` to ``after`` (sets both sides scored prompt by prompt)."""
    return {
        name: PairedChange.of(acc, after[name]).as_dict()
        for name, acc in before.items()
        if name in after and acc.n == after[name].n and len(acc.matches) == acc.n == len(after[name].matches)
    }


def _warm_start_lines(data: dict[str, Any]) -> list[str]:
    """A warm-started real model: EX before the warm start, after it (before RL) and after RL."""
    base = data.get("ex_before_warm_start") or {}
    if not base:
        return []
    lines = [
        "## Held-out questions: before the warm start, after it, after RL",
        "",
        "Greedy single-turn EX (%) +- one SE; changes are paired (SE of the per-question difference).",
        "",
        "| held-out set | n | base model | after warm start | after RL | warm start change | RL change | total |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, acc in base.items():
        before, after = data["ex_before"].get(name), data["ex_after"].get(name)
        warm, total = data["warm_start_change"].get(name), data["warm_start_and_rl_change"].get(name)
        rl = data.get("heldout") or {}

        def cell(value: dict[str, Any] | None) -> str:
            return "-" if not value else f"{100 * value['ex']:.1f} +- {100 * value['se']:.1f}"

        def change(value: dict[str, Any] | None) -> str:
            return "-" if not value else f"{100 * value['diff']:+.1f} (SE {100 * value['se_diff']:.1f})"

        lines.append(
            f"| {name} | {acc['n']} | {cell(acc)} | {cell(before)} | {cell(after)} | {change(warm)} | "
            f"{change(rl if len(base) == 1 else None)} | {change(total)} |"
        )
    return [*lines, ""]


def _row(name: str, before: Accuracy, after: Accuracy) -> str:
    delta = 100 * (after.ex - before.ex)
    return (
        f"| {name} | {before.n} | {100 * before.ex:.1f} +- {100 * before.standard_error:.1f} | "
        f"{100 * after.ex:.1f} +- {100 * after.standard_error:.1f} | {delta:+.1f} |"
    )


def _detail_lines(result: RunResult) -> list[str]:
    """Multi-turn EX, the first-correct-turn distribution and Table 8's structural rates."""
    if not result.before_detail or not result.after_detail:
        return []
    turns = next(iter(result.before_detail.values())).turns
    lines = [
        f"### With ODT feedback: EX within T = {turns} turns (greedy) and the first correct turn",
        "",
        "| held-out set | EX within T before (%) | after (%) | first correct turn before (1, 2, ..., never) | after |",
        "|---|---:|---:|---|---|",
    ]
    for name, before in result.before_detail.items():
        after = result.after_detail[name]

        def dist(m: Any) -> str:
            return " / ".join(str(m.first_correct.get(k, 0)) for k in [*range(1, m.turns + 1), 0])

        lines.append(
            f"| {name} | {100 * before.within_turns.ex:.1f} | {100 * after.within_turns.ex:.1f} | "
            f"{dist(before)} | {dist(after)} |"
        )
    lines += [
        "",
        "### ODT structural mismatch rates of the single-turn answers (the paper's Table 8), before -> after",
        "",
        "| held-out set | SELECT | JOIN | WHERE | GROUP | average |",
        "|---|---:|---:|---:|---:|---:|",
    ]

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.1f}"

    for name, before in result.before_detail.items():
        after = result.after_detail[name]
        cells = [
            f"{pct(before.structural.get(c))} -> {pct(after.structural.get(c))}"
            for c in ("SELECT", "JOIN", "WHERE", "GROUP", "average")
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _short(value: Any) -> Any:
    """Floats to three decimals, also inside a dict (report text, not summary.json)."""
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    return value


def _tenths(values: list[float]) -> str:
    """The mean of each tenth of a per-step series.

    >>> _tenths([0.0, 1.0] * 10)
    '0.5 0.5 0.5 0.5 0.5 0.5 0.5 0.5 0.5 0.5'
    """
    if not values:
        return "-"
    parts = 10 if len(values) >= 10 else len(values)
    bounds = [round(i * len(values) / parts) for i in range(parts + 1)]
    return " ".join(f"{statistics.fmean(values[a:b]):.2g}" for a, b in pairwise(bounds) if b > a)


def _headline(data: dict[str, Any]) -> list[str]:
    heldout = data.get("heldout")
    if not heldout:
        return []
    verdict = "more than" if heldout["significant"] else "not more than"
    return [
        f"**Held-out template EX (pooled: {', '.join(heldout['sets'])}; n = {heldout['n']}): "
        f"{100 * heldout['ex_before']:.1f}% -> {100 * heldout['ex_after']:.1f}%, paired change "
        f"{100 * heldout['diff']:+.1f} points (SE of the paired difference {100 * heldout['se_diff']:.1f}; "
        f"{heldout['gained']} prompts gained, {heldout['lost']} lost): {verdict} two standard errors.**",
        "",
    ]


def _selection_lines(data: dict[str, Any]) -> list[str]:
    """Which RL step's weights were kept and scored, the validation checks, and the last step's
    pooled held-out EX beside the kept weights' when they differ."""
    lines = []
    for reward, selection in (data.get("rl_selection") or {}).items():
        curve = ", ".join(f"{c['step']}: {100 * c['validation_ex']:.1f}%" for c in selection["checks"])
        lines.append(
            f"EX after RL is that of the kept weights (`{reward}`): step {selection['chosen_step']} of "
            f"{selection['last_step']}, the best greedy EX on the validation prompts (`--rl-select "
            f"{selection['rule']}`; step 0 is the warm start; checks every {selection['every']} steps, "
            f"step: EX: {curve})."
        )
    last = data.get("heldout_last_step")
    if last:
        lines.append(
            f"The last step's weights, for comparison: held-out template EX {100 * last['ex_before']:.1f}% -> "
            f"{100 * last['ex_after']:.1f}%, paired change {100 * last['diff']:+.1f} points "
            f"(SE {100 * last['se_diff']:.1f})."
        )
    return [*lines, ""] if lines else []


def _sft_line(sft: dict[str, Any]) -> str:
    if not sft:
        return "None (a pretrained model)."
    reused = " (reused from the run folder's checkpoint)" if sft.get("resumed") else ""
    checks = sft.get("checks") or []
    stopping = ""
    if checks:
        curve = ", ".join(f"{c['step']}: {100 * c['validation_ex']:.1f}%" for c in checks)
        ended = (
            f"reached at step {sft['stopped_at_check']}, then a cool-down"
            if sft.get("stopped_at_check") is not None
            else "not reached: the whole budget ran"
        )
        stopping = (
            f" Target {100 * sft['target']:.0f}% greedy EX on {sft['validation_size']} validation prompts of the RL "
            f"pool: {ended} (checks, step: EX: {curve})."
        )
    return (
        f"{sft.get('steps')} steps in {sft.get('seconds')} s, final loss {sft.get('final_loss', float('nan')):.4f}"
        f"{reused}; {_share_words(sft.get('two_turn_share', 0.5))} of the examples show a feedback turn before the "
        f"final answer.{stopping}"
    )


def _share_words(share: float) -> str:
    """``0.5`` as "half", other shares as a percentage (the embedded warm start's is 0.5, a recipe's its own)."""
    return "half" if share == 0.5 else f"{100 * share:.0f}%"


def train_summary(result: RunResult, settings: Mapping[str, Any]) -> RunSummary:
    """``summary.json`` of a run: the command's ``settings`` and versions, then :func:`summary`'s numbers
    (and the leakage guard's findings, if any)."""
    return RunSummary("train", settings, summary(result) | ({"leakage": result.leakage} if result.leakage else {}))


def write_train_run(result: RunResult, out: Path, run: RunSummary | None = None) -> Path:
    """Write the run folder once: ``samples.jsonl`` (every logged RL step of every reward's run,
    ``run_reward`` naming it), the saved model's card (:func:`progress_sql.studies.card.write_run_card`),
    the plots, ``report.md`` and last ``summary.json`` (``run``; without one, no settings); returns the
    report's path."""
    folder = RunFolder(out).create()
    run = run or train_summary(result, {})
    folder.summary_path.unlink(missing_ok=True)  # written last: a present summary means a complete run
    folder.write_records({"run_reward": reward, **step} for reward, rl in result.rl.items() for step in rl.metrics)
    write_run_card(out, run.to_dict(), embedded=result.config.embedded)  # the saved model's README.md
    report = folder.write_report(render_report(result, summary(result), write_plots(result, out)))
    folder.write_summary(run)
    return report


def write_plots(result: RunResult, out: Path) -> list[str]:
    """The run's PNG plots in ``out``: their file names, or one note saying why there are none."""
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
    except PlottingUnavailableError as error:
        return [f"(no plots: {error})"]
    return ["training_curves.png", "reward_components.png", "ex_before_after.png"]


def render_report(result: RunResult, data: dict[str, Any], plots: Sequence[str]) -> str:
    """``report.md``: the run's settings, data, warm start, EX before and after RL, RL and the plots
    (``data``: :func:`summary`)."""
    config = result.config
    lines = [
        "# progress-sql train: run report",
        "",
        f"Model: `{config.model}`; trainer preset `{config.rl.preset}`; reward `{config.rl.reward}`; "
        f"T = {config.rl.turns}; {config.rl.steps} RL steps of {config.rl.prompts_per_step} prompts x "
        f"{config.rl.generations} samples; seed {config.seed}; {config.threads} thread(s); {data['seconds']} s in all.",
        "",
        *(
            [
                "Prompts use the compact profile (no system prompt, no schema, feedback as tag codes): the tiny",
                "from-scratch model learns its two databases' schemas. Real models use a chat template and a prompt",
                "style.",
                "",
            ]
            if config.embedded
            else [
                f"Prompt style `{config.prompt}` through the model's chat template (progress_sql.prompts).",
                *([_precision_line(result.precision), ""] if result.precision else [""]),
            ]
        ),
        "## Data",
        "",
        *(f"- {name}: {size}" for name, size in result.data_sizes.items()),
        "",
        "## Supervised warm start",
        "",
        _sft_line(result.sft),
        "",
        *_warm_start_lines(data),
        "## Execution accuracy before and after RL",
        "",
        "Greedy single-turn decoding, strict comparison; +- is one standard error (sqrt(p(1-p)/n)); the same",
        "prompts are scored before and after, so the change is paired (its standard error below).",
        "",
        *_headline(data),
        *_selection_lines(data),
        "| held-out set | n | EX before (%) | EX after (%) | change |",
        "|---|---:|---:|---:|---:|",
        *(_row(name, result.before[name], result.after[name]) for name in result.before if name in result.after),
        "",
        *(
            [
                "Real Spider questions (`real_test`) are a stretch figure: a model trained from scratch on templates",
                "is not expected to understand free-form English (0-3% in the prototype; docs/training.md).",
                "",
            ]
            if config.embedded
            else []
        ),
        f"Guard: {result.guard}.",
        "",
        *_detail_lines(result),
        *(f"Warning: {w}." for w in result.warnings),
        "",
        "## RL",
        "",
        f"RL prompts: {result.rl_data or 'the task training examples'}.",
        "",
        *(
            f"- reward `{reward}`: "
            + ", ".join(f"{k} {_short(v)}" for k, v in values.items() if k != "zero_variance_share")
            for reward, values in data["rl"].items()
        ),
        "",
        "Tied groups (all samples of a prompt scored alike, |std| < 1e-6: no learning signal), mean share per",
        "tenth of the run (every step in summary.json and the training-curves plot):",
        "",
        *(f"- `{r}`: {_tenths(v['zero_variance_share'])}" for r, v in data["rl"].items()),
        "",
        *(f"![{p}]({p})" for p in plots),
        "",
    ]
    return "\n".join(lines + _compared_lines(result))


def _compared_lines(result: RunResult) -> list[str]:
    """The ``--compare-reward`` section: EX after RL with each reward (nothing without one)."""
    if not result.compare_after:
        return []
    config = result.config
    return [
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
