"""``progress-sql ablate``: the paper's Table 3 ablations (studies.ablate) as one command.

The run folder holds ``report.md`` with the table and ``ablation.png``, ``summary.json`` (the
command's settings and versions, then the table's rows and the warm starts), ``samples.jsonl`` (one
record per arm and seed) and, per seed, the shared warm start and one folder per arm (a rerun with
the same ``--out`` runs only the arms without a completion marker).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from progress_sql.cli._common import (
    add_command,
    data_dir_option,
    json_option,
    out_dir_option,
    profile_option,
    stderr,
    stdout,
    view_option,
    write_view,
)
from progress_sql.progress import phases, progress_bar

if TYPE_CHECKING:  # the training modules load TRL: only a run imports them
    from progress_sql.studies.ablate import AblateRun

_ARMS = typer.Option(
    None,
    "--arms",
    help="Comma-separated arms (default: all): progressive, one-shot, single-turn, no-decay (former name: "
    "no-late), no-align, no-exec, gspo.",
)
_PER_DEVICE_BATCH = typer.Option(
    None, "--per-device-batch", help="Sequences per forward/backward pass (accumulation makes up the step)."
)
_THREADS = typer.Option(
    None, "--threads", help="Torch threads, one per idle core (default 1; a recipe's own); arms run one at a time."
)
_RECIPE_NAME = typer.Option(
    None, "--recipe", help="A real model's recipe (train --recipe): its warm start, RL and held-out questions."
)
_MODEL = typer.Option(
    None,
    "--model",
    help="A real model: the recipe that trains it (smollm2-135m: smollm2-cpu), or with --recipe "
    "another model in its place.",
)
_HELDOUT_SIZE = typer.Option(
    None, "--heldout-size", help="A recipe's held-out questions (default: its own, 300 for smollm2-cpu)."
)


_MEASURE_FEEDBACK = typer.Option(
    None, "--measure-feedback",
    help="Feedback of the multi-turn held-out measurement, the same for every arm (default: the profile's ODT "
    "tags; execution: the execution observation only, no gold in the prompts).",
)  # fmt: skip


def ablate_command(
    out: Path = out_dir_option(Path("runs/ablate"), also="ablation.png, seed-<s>/; a rerun with it resumes"),
    seeds: int = typer.Option(1, "--seeds", help="Seeds 0 .. N-1, each with its own warm start and data split."),
    arms: str | None = _ARMS,
    steps: int | None = typer.Option(None, "--steps", help="RL steps per arm (default 300; --quick 3)."),
    lr: float | None = typer.Option(None, "--lr", help="RL learning rate of every arm (default: the run's own)."),
    per_device_batch: int | None = _PER_DEVICE_BATCH,
    quick: bool = typer.Option(False, "--quick", help="A reduced run for tests: tiny warm start, few steps."),
    threads: int | None = _THREADS,
    recipe_name: str | None = _RECIPE_NAME,
    model: str | None = _MODEL,
    data_dir: Path | None = data_dir_option(),
    sft_steps: int | None = typer.Option(None, "--sft-steps", help="A recipe's warm-start steps (default: its own)."),
    heldout_size: int | None = _HELDOUT_SIZE,
    profile: str = profile_option(),
    measure_feedback: str | None = _MEASURE_FEEDBACK,
    as_json: bool = json_option(),
    view: bool = view_option(),
) -> None:
    """Run the paper's ablations from one shared warm start per seed and write the Table 3 view."""
    from progress_sql.studies.ablate import AblateRequest, run_ablation

    options = locals()
    request = AblateRequest(**{name: options[name] for name in _REQUEST_OPTIONS}, recipe=recipe_name)
    with progress_bar("{task.description}", console=stderr, quiet=as_json) as progress:
        run = run_ablation(request, phases(progress))
    write_view(out, view, quiet=as_json)
    if as_json:
        typer.echo(json.dumps(run.summary.to_dict(), indent=2))
    else:
        _print(run)


#: The options :class:`AblateRequest` takes as they are, by its field names.
_REQUEST_OPTIONS = (
    "out", "seeds", "arms", "steps", "lr", "per_device_batch", "quick", "threads", "model", "data_dir", "sft_steps",
    "heldout_size", "profile", "measure_feedback",
)  # fmt: skip


def _print(run: AblateRun) -> None:
    """The Table 3 view: held-out EX by arm, against the warm start and the progressive arm."""
    from progress_sql.studies.ablate import held_out_words

    result = run.result
    table = Table(title=f"held-out EX by arm (greedy, single turn; {held_out_words(run.config)})", header_style="bold")
    for column in ("arm", "EX (%)", "vs warm (points)", "vs progressive (points)", "> 2 SE"):
        table.add_column(column, justify="right")
    for row in result.rows():
        versus = "-" if row.diff_vs_progressive is None else (
            f"{100 * row.diff_vs_progressive:+.1f} +- {100 * (row.se_diff_vs_progressive or 0):.1f}"
        )  # fmt: skip
        beyond = "-" if row.beyond_2se_vs_progressive is None else str(row.beyond_2se_vs_progressive).lower()
        change = f"{100 * row.change_vs_warm:+.1f} +- {100 * row.se_change_vs_warm:.1f}"
        table.add_row(row.arm, f"{100 * row.ex:.1f} +- {100 * row.se:.1f}", change, versus, beyond)
    stdout.print(table)
    stdout.print(f"report: {run.config.out / 'report.md'} ({result.seconds:.0f} s)")


def register(app: typer.Typer) -> None:
    add_command(app, "ablate", ablate_command)
