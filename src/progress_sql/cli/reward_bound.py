"""``progress-sql reward-bound``: the progressive reward's upper bound per first-correct turn k*.

The run folder holds ``summary.json``, ``samples.jsonl`` (one record per k*), ``report.md``,
``reward_bound.json`` (the curve, as ``--json`` prints it) and ``reward_bound.png``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import typer

from progress_sql.cli import _common as common
from progress_sql.plots import PlottingUnavailableError, reward_bound_plot
from progress_sql.rewards.progressive import ProgressiveConfig, upper_bound_curve
from progress_sql.runfolder import RunSummary, basic_report, write_json


def reward_bound_command(
    turns: int = typer.Option(4, "--turns", help="Turn budget T."),
    out: Path = common.out_dir_option(Path("runs/reward-bound"), also="reward_bound.json, reward_bound.png"),
    no_align_penalty: bool = typer.Option(
        False, "--no-align-penalty", help="Pay 0 instead of omega_align- for a first-turn success."
    ),
    as_json: bool = common.json_option(),
) -> None:
    """Print the bound of R(Y) for k* = 1..T and for no success (format kept, SQL executable at both
    ends, Delta <= 1), check that it falls strictly as k* grows, and save it as a plot."""
    if turns < 1:
        common.fail(f"--turns must be at least 1, got {turns}")
    config = ProgressiveConfig(no_align_penalty_on_first_turn_success=no_align_penalty)
    points = upper_bound_curve(turns, config)
    values = [value for _, value in points]
    falling = all(a > b for a, b in itertools.pairwise(values))
    record = {
        "reward": config.version,
        "config_hash": config.config_hash,
        "turns": turns,
        "bound": {label: round(value, 6) for label, value in points},
        "strictly_falling": falling,
    }
    summary = RunSummary("reward-bound", {"turns": turns, "no_align_penalty": no_align_penalty}, record)
    samples = [{"k_star": label, "bound": round(value, 6)} for label, value in points]
    report = basic_report(f"Progressive reward bound, T = {turns}", summary.to_dict(), results=record)
    common.write_run(out, summary, samples, report + "\n![bound](reward_bound.png)\n")
    write_json(out / "reward_bound.json", record)
    try:
        plot = reward_bound_plot(points, out / "reward_bound.png", f"Progressive reward bound, T={turns}")
    except PlottingUnavailableError as error:
        common.stderr.print(f"[yellow]{error}[/]")
        plot = None
    if as_json:
        typer.echo(json.dumps(record, indent=2))
    else:
        table = common.table(f"upper bound of R(Y), T = {turns}", ["first correct turn k*"], ["bound"])
        for label, value in points:
            table.add_row(label, f"{value:.3f}")
        common.stdout.print(table)
        common.stdout.print("strictly falling as k* grows: " + ("[green]yes[/]" if falling else "[red]no[/]"))
        if plot is not None:
            common.stdout.print(f"plot: {plot}")
    if not falling:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    common.add_command(app, "reward-bound", reward_bound_command)
