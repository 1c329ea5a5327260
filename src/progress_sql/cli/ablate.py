"""``progress-sql ablate``: the paper's Table 3 ablations (training.ablate) as one command.

The run folder holds ``report.md`` with the table and ``ablation.png``, ``summary.json`` (the
command's settings and versions, then the table's rows and the warm starts), ``samples.jsonl`` (one
record per arm and seed) and, per seed, the shared warm start and one folder per arm (a rerun with
the same ``--out`` runs only the arms without a completion marker).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import typer
from rich.table import Table

from progress_sql.cli._common import (
    add_command,
    json_option,
    out_dir_option,
    prepare_out,
    stderr,
    stdout,
    view_option,
    write_run,
    write_view,
)
from progress_sql.progress import progress_bar
from progress_sql.runfolder import RunSummary


def ablate_command(
    out: Path = out_dir_option(Path("runs/ablate"), also="ablation.png, seed-<s>/; a rerun with it resumes"),
    seeds: int = typer.Option(1, "--seeds", help="Seeds 0 .. N-1, each with its own warm start and data split."),
    arms: str | None = typer.Option(
        None,
        "--arms",
        help="Comma-separated arms (default: all): progressive, one-shot, single-turn, no-late, "
        "no-align, no-exec, gspo.",
    ),
    steps: int | None = typer.Option(None, "--steps", help="RL steps per arm (default 300; --quick 3)."),
    quick: bool = typer.Option(False, "--quick", help="A reduced run for tests: tiny warm start, few steps."),
    threads: int = typer.Option(1, "--threads", help="Torch threads (one per idle core); arms run one at a time."),
    as_json: bool = json_option(),
    view: bool = view_option(),
) -> None:
    """Run the paper's ablations from one shared warm start per seed and write the Table 3 view."""
    from progress_sql.training.ablate import (
        DEFAULT_ARMS,
        AblateConfig,
        arm_names,
        records,
        report,
        run_ablate,
        summary,
    )

    chosen = arm_names(arms) if arms else DEFAULT_ARMS
    config = (
        AblateConfig.quick(out, seeds=seeds, arms=chosen, threads=threads)
        if quick
        else AblateConfig(out=out, seeds=seeds, arms=chosen, threads=threads)
    )
    if steps is not None:
        config = replace(config, rl=replace(config.rl, steps=steps))
    prepare_out(out)
    with progress_bar("{task.description}", console=stderr, quiet=as_json) as progress:

        def phase(description: str, total: int):  # type: ignore[no-untyped-def]
            job = progress.add_task(description, total=total)
            return lambda n: progress.advance(job, n)

        result = run_ablate(config, phase)
    settings = {
        "seeds": seeds, "arms": list(chosen), "steps": config.rl.steps, "quick": quick, "threads": threads,
        "sft_steps": config.sft_steps, "prompts_per_step": config.rl.prompts_per_step,
        "generations": config.rl.generations, "lr": config.rl.learning_rate, "temperature": config.rl.temperature,
        "turns": config.rl.turns,
    }  # fmt: skip
    run = RunSummary("ablate", settings, summary(result))
    data = run.to_dict()
    write_run(out, run, records(result), report(result, data, out))
    write_view(out, view, quiet=as_json)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    table = Table(title="held-out EX by arm (greedy, single turn; pooled template sets)", header_style="bold")
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
    stdout.print(f"report: {out / 'report.md'} ({result.seconds:.0f} s)")


def register(app: typer.Typer) -> None:
    add_command(app, "ablate", ablate_command)
