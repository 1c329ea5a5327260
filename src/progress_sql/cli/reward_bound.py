"""``progress-sql reward-bound``: the progressive reward's upper bound per first-correct turn k*.

The run folder holds ``summary.json``, ``samples.jsonl`` (one record per k*), ``report.md``,
``reward_bound.json`` (the curve, as ``--json`` prints it) and ``reward_bound.png``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from progress_sql.cli import _common as common
from progress_sql.rewards.bound import reward_bound_run


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
    run = reward_bound_run(turns, out, no_align_penalty=no_align_penalty)
    if run.plot_problem is not None:
        common.stderr.print(f"[yellow]{escape(run.plot_problem)}[/]")
    if as_json:
        typer.echo(json.dumps(run.record, indent=2))
    else:
        table = common.table(f"upper bound of R(Y), T = {turns}", ["first correct turn k*"], ["bound"])
        for label, value in run.points:
            table.add_row(label, f"{value:.3f}")
        common.stdout.print(table)
        common.stdout.print("strictly falling as k* grows: " + ("[green]yes[/]" if run.falling else "[red]no[/]"))
        if run.plot is not None:
            common.stdout.print(f"plot: {run.plot}")
    if not run.falling:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    common.add_command(app, "reward-bound", reward_bound_command)
