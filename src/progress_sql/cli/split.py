"""``progress-sql split``: cut a task, a questions file or a mixture into schema-disjoint splits
(train / validation / test by database; docs/training.md#a-clean-rl-set)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from progress_sql.cli import _common as common
from progress_sql.data.split_run import SplitRequest, run_split
from progress_sql.data.splits import GROUP_BY


def split_command(
    out: Path = common.out_dir_option(also="<split>.<source>.json and <split>.mix.json per split"),
    task: str | None = common.task_option(required=False),
    data_dir: Path | None = common.data_dir_option(),
    questions: str | None = typer.Option(None, "--questions", help="Another questions file of the task."),
    mix: Path | None = typer.Option(None, "--mix", help="A mixture spec: split what it draws (docs/export.md)."),
    fractions: str = typer.Option(
        "train=0.8,validation=0.1,test=0.1", "--fractions", help="Target share of the examples per split."
    ),
    group_by: str = typer.Option(
        "fingerprint",
        "--group-by",
        help=f"Keep together: {' or '.join(GROUP_BY)} (databases with one schema fingerprint stay together).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the assignment of databases to splits."),
    as_json: bool = common.json_option(),
) -> None:
    """Cut a dataset into schema-disjoint train / validation / test splits by database."""
    run = run_split(SplitRequest(out, task, data_dir, questions, mix, fractions, group_by, seed))
    if as_json:
        typer.echo(json.dumps(run.summary.to_dict(), indent=2))
        return
    table = common.table(f"split ({group_by}, seed {seed})", ["split"], ["target", "examples", "share", "databases"])
    for p in run.plan.splits:
        table.add_row(p.name, f"{100 * p.target:.1f}%", str(p.examples), f"{100 * p.share:.1f}%", str(len(p.databases)))
    common.stdout.print(table)
    common.stdout.print(f"wrote {out}: per split <split>.<source>.json and <split>.mix.json; summary.json, report.md")


def register(app: typer.Typer) -> None:
    common.add_command(app, "split", split_command)
