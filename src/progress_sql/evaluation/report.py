"""What an evaluation run leaves for people: ``report.md`` (:func:`render_report`, pure) and its plots
(matplotlib, the ``[plot]`` extra; without it the report says so and the run still succeeds)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from progress_sql.evaluation.harness import EvalRecord

PLOTS: tuple[tuple[str, str], ...] = (
    ("accuracy_by_level.png", "Accuracy by difficulty level"),
    ("odt_categories.png", "ODT structural mismatch rates"),
    ("vote_share.png", "Share of samples in the winning result group"),
)


def _se(value: float | None) -> str:
    """`` +- <one standard error, in points>`` (nothing when unknown: an older run folder)."""
    return "" if value is None else f" +- {100 * value:.1f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def write_plots(out: Path, summary: dict[str, Any], records: Sequence[EvalRecord]) -> list[Path]:
    """Draw the three plots into ``out``; raises PlottingUnavailableError without matplotlib."""
    from progress_sql.plots import accuracy_by_level_plot, odt_categories_plot, vote_share_histogram

    metrics = summary["metrics"]
    task = summary["settings"]["task"]["name"]
    levels: dict[str, dict[str, float | None]] = {
        level: {"EX": block["execution_accuracy"], "TS": block["test_suite_accuracy"]}
        for level, block in metrics["by_level"].items()
    }
    bird = metrics.get("bird")
    if bird:  # BIRD's own averages (a failing gold counts as 0), per BIRD level and in total
        levels = {
            level: {"EX (BIRD)": bird["ex"][level], "Soft-F1": bird["soft_f1"][level]}
            | ({"R-VES": bird["r_ves"][level]} if bird["r_ves"] else {})
            for level in bird["count"]
        }
        counts = dict(bird["count"])
    elif not levels:
        levels = {"all": {"EX": metrics["execution_accuracy"], "TS": metrics["test_suite_accuracy"]}}
        counts = {"all": metrics["scored"]}
    else:
        counts = {level: block["scored"] for level, block in metrics["by_level"].items()}
    odt = metrics["odt"]
    names = {"other": "ORDER BY / LIMIT", "nesting": "nesting, set ops", "parse": "unparsable"}
    rates = {**odt["rates"], **{names.get(k, k): v for k, v in odt["other_rates"].items()}}
    rates["average of the first four"] = odt["average"]
    shares = [r.vote_share for r in records if r.status == "scored"]
    return [
        accuracy_by_level_plot(levels, counts, out / PLOTS[0][0], f"{task}: accuracy by level"),
        odt_categories_plot(rates, out / PLOTS[1][0], f"{task}: ODT mismatches\n({odt['examples']} answers)"),
        vote_share_histogram(
            shares, out / PLOTS[2][0], f"{task}: vote share (n = {metrics['samples_per_example']} samples)"
        ),
    ]


def _bird_section(bird: dict[str, Any] | None, asked: dict[str, Any] | None) -> list[str]:
    """BIRD's metrics as its evaluators print them (percent, per level and total)."""
    if not bird:
        return []
    lines = [
        "",
        "## BIRD metrics",
        "",
        "As BIRD's evaluators average them: over every question with its database, a failing gold counting as 0.",
        "",
        "| level | questions | EX (%) | Soft-F1 (%) | R-VES (%) |",
        "|---|---:|---:|---:|---:|",
    ]
    for level, count in bird["count"].items():
        ves = bird["r_ves"][level] if bird["r_ves"] else None
        lines.append(
            f"| {level} | {count} | {_pct(bird['ex'][level])} | {_pct(bird['soft_f1'][level])} | {_pct(ves)} |"
        )
    repeats = (asked or {}).get("ves_repeats", 0)
    if bird["r_ves"]:
        lines += ["", f"R-VES: {repeats} timing repeats per correct answer; it depends on the machine and its load."]
    else:
        lines += ["", "R-VES not measured (`--ves-repeats N` times each correct answer N times)."]
    if bird["soft_f1_unavailable"]:
        lines.append(f"Soft-F1 counted as 0 for {bird['soft_f1_unavailable']} truncated results.")
    return lines


def render_report(summary: dict[str, Any], plots: Sequence[str] = (), plot_error: str | None = None) -> str:
    """The Markdown report of one run."""
    settings, metrics = summary["settings"], summary["metrics"]
    task = settings["task"]
    lines = [
        f"# Evaluation: {task['name']} (version {task['version']})",
        "",
        f"- source: {settings['source']}",
        f"- preset: `{settings['preset']['name']}` {settings['preset']['options']}",
        f"- decoding: {settings['decoding']}",
        *(
            ["- warning: a vote over identical samples (n > 1 at temperature 0): vote@N equals greedy EX"]
            if settings["decoding"].get("degenerate_vote")
            else []
        ),
        f"- versions: {', '.join(f'{k} {v}' for k, v in summary['versions'].items())}",
        f"- ODT config {summary['odt_config_version']}, reward {summary['reward_config']['version']}",
        "",
        "## Metrics",
        "",
        "| metric | value |",
        "|---|---:|",
        f"| examples | {metrics['examples']} |",
        f"| scored | {metrics['scored']} |",
        f"| skipped (database absent or bad) | {metrics['skipped']} |",
        f"| gold invalid | {metrics['gold_invalid']} |",
        f"| EX (%) | {_pct(metrics['execution_accuracy'])}{_se(metrics.get('execution_accuracy_se'))} |",
    ]
    if metrics["ts_scored"]:
        lines.append(
            f"| TS (%), {metrics['ts_scored']} examples with a suite | {_pct(metrics['test_suite_accuracy'])} |"
        )
        lines.append(f"| EX - TS (points), same examples | {_pct(metrics['ex_minus_ts'])} |")
    if "first_sample_accuracy" in metrics:
        lines.append(f"| first sample EX (%) | {_pct(metrics['first_sample_accuracy'])} |")
    lines += [
        f"| valid SQL (%) | {_pct(metrics['valid_sql_rate'])} |",
        f"| format (%) | {_pct(metrics['format_rate'])} |",
    ]
    lines += [f"| pass@{k} (%) | {_pct(v)} |" for k, v in metrics["pass_at_k"].items()]
    if metrics["by_level"]:
        lines += [
            "",
            "## By difficulty",
            "",
            "| level | scored | matched | EX (%) | TS (%) |",
            "|---|---:|---:|---:|---:|",
        ]
        for level, block in metrics["by_level"].items():
            lines.append(
                f"| {level} | {block['scored']} | {block['matched']} | {_pct(block['execution_accuracy'])} "
                f"| {_pct(block['test_suite_accuracy'])} |"
            )
    by_kind = metrics.get("by_kind") or {}
    if set(by_kind) - {"read"}:  # a run with write tasks or ambiguous questions (docs/tasks.md)
        lines += ["", "## By task kind", "", "| kind | scored | matched | EX (%) |", "|---|---:|---:|---:|"]
        for kind, block in by_kind.items():
            lines.append(f"| {kind} | {block['scored']} | {block['matched']} | {_pct(block['execution_accuracy'])} |")
    lines += _bird_section(metrics.get("bird"), settings.get("bird"))
    lines += _odt_section(metrics["odt"]) + _left_out_section(metrics, summary.get("notes", []))
    if plots or plot_error:
        lines += ["", "## Plots", ""]
        lines += [f"![{title}]({name})" for name, title in PLOTS if name in plots]
        if plot_error:
            lines.append(f"Plots not drawn: {plot_error}")
    return "\n".join(lines) + "\n"


def _odt_section(odt: dict[str, Any]) -> list[str]:
    """The ODT's structural mismatch rates and tags of the scored answers."""
    lines = ["", f"## ODT structural mismatches ({odt['examples']} scored answers)", "", "| category | rate (%) |"]
    lines.append("|---|---:|")
    lines += [f"| {category} | {_pct(rate)} |" for category, rate in odt["rates"].items()]
    lines.append(f"| average of the four | {_pct(odt['average'])} |")
    lines += [f"| {category} | {_pct(rate)} |" for category, rate in odt["other_rates"].items()]
    if odt["tag_histogram"]:
        lines += ["", "Tags: " + ", ".join(f"{tag} {count}" for tag, count in odt["tag_histogram"].items())]
    return lines


def _left_out_section(metrics: dict[str, Any], notes: Sequence[str]) -> list[str]:
    """What was not scored (absent databases, invalid golds) and the test-suite notes."""
    lines = ["", "## Left out", ""]
    skipped = metrics["skipped_examples"]
    for reason, by_db in skipped["by_reason"].items():
        dbs = ", ".join(f"`{db}` ({count})" for db, count in by_db.items())
        lines.append(f"- {sum(by_db.values())} examples skipped, {reason}: {dbs}.")
    invalid = metrics["gold_invalid_examples"]
    if invalid:
        lines.append(f"- {len(invalid)} examples with an invalid gold query (never a match, not scored):")
        lines += [f"  - #{item['index']} ({item['db_id']}): {item['reason']}" for item in invalid[:50]]
    if not skipped["count"] and not invalid:
        lines.append("- nothing: every example was scored.")
    lines += [f"- note: {note}" for note in notes if note.startswith("test_suite")]
    return lines
