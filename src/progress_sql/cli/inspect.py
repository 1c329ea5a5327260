"""``progress-sql inspect``: the suspicious high-reward samples of a rollout, eval (``--turns`` too) or train
run, each with its reasons (the named checks of :mod:`progress_sql.evaluation.suspicious`), and a file of random
matched samples for human review (docs/training.md#inspecting-high-reward-samples)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from progress_sql.cli import _common as common
from progress_sql.progress import phases, progress_bar
from progress_sql.runfolder import RUN_KINDS
from progress_sql.runs.inspect import InspectRequest, run_inspect

_SOURCE_HELP = f"A run folder of progress-sql {', '.join(RUN_KINDS)} (--out), or a rollout's samples.jsonl."


def inspect_command(
    source: Path = typer.Argument(..., help=_SOURCE_HELP),
    out: Path = common.out_dir_option(also="review.md with --sample"),
    task: str | None = common.task_option(required=False),
    data_dir: Path | None = common.data_dir_option(),
    suite: Path | None = common.suite_option(),
    audit: Path | None = typer.Option(None, "--audit", help="A gold-audit run folder: rewards on flagged golds."),
    top: int | None = typer.Option(None, "--top", help="Only the N highest-reward episodes (default: every one)."),
    sample: int = typer.Option(0, "--sample", help="Also write N random matched samples to review.md."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    workers: int = common.workers_option(),
    as_json: bool = common.json_option(),
) -> None:
    """Flag suspicious high-reward samples of a rollout, eval (--turns too) or train run: hard-coded results, LIMIT
    guesses, suite failures."""
    request = InspectRequest(source, out, task, data_dir, suite, audit, top, sample, seed,
                             common.resolve_workers(workers))  # fmt: skip
    with progress_bar("inspect", console=common.stderr) as bar:
        run = run_inspect(request, phases(bar))
    if as_json:
        typer.echo(json.dumps(run.summary.to_dict(), indent=2))
        return
    results = run.summary.results
    table = common.table(f"inspect ({results['kind']} run): {results['flagged']} of {results['inspected']} "
                         "episodes flagged", ["reason"], ["episodes"])  # fmt: skip
    for name, n in results["per_reason"].items():
        table.add_row(name, str(n))
    common.stdout.print(table)
    if results["profile"] is not None:
        common.stdout.print(f"profile: {results['profile']}")
    common.stdout.print(f"wrote {out / 'samples.jsonl'}, {out / 'summary.json'} and {out / 'report.md'}")


def register(app: typer.Typer) -> None:
    common.add_command(app, "inspect", inspect_command)
