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
from typing import Any

import typer
from rich.table import Table

from progress_sql.cli._common import (
    add_command,
    data_dir_option,
    fail,
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
    lr: float | None = typer.Option(None, "--lr", help="RL learning rate of every arm (default: the run's own)."),
    per_device_batch: int | None = typer.Option(
        None, "--per-device-batch", help="Sequences per forward/backward pass (accumulation makes up the step)."
    ),
    quick: bool = typer.Option(False, "--quick", help="A reduced run for tests: tiny warm start, few steps."),
    threads: int | None = typer.Option(
        None, "--threads", help="Torch threads, one per idle core (default 1; a recipe's own); arms run one at a time."
    ),
    recipe_name: str | None = typer.Option(
        None, "--recipe", help="A real model's recipe (train --recipe): its warm start, RL and held-out questions."
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        help="A real model: the recipe that trains it (smollm2-135m: smollm2-cpu), or with --recipe "
        "another model in its place.",
    ),
    data_dir: Path | None = data_dir_option(),
    sft_steps: int | None = typer.Option(None, "--sft-steps", help="A recipe's warm-start steps (default: its own)."),
    heldout_size: int | None = typer.Option(
        None, "--heldout-size", help="A recipe's held-out questions (default: its own, 300 for smollm2-cpu)."
    ),
    as_json: bool = json_option(),
    view: bool = view_option(),
) -> None:
    """Run the paper's ablations from one shared warm start per seed and write the Table 3 view."""
    from progress_sql.training.ablate import (
        DEFAULT_ARMS,
        AblateConfig,
        arm_names,
        held_out_words,
        records,
        report,
        run_ablate,
        summary,
    )

    chosen = arm_names(arms) if arms else DEFAULT_ARMS
    if recipe_name is not None or model is not None:
        from progress_sql.training.pretrained import recipe, recipe_config, recipe_for_model

        if quick:
            fail("--quick is the embedded default's reduced run: use --steps, --sft-steps and --heldout-size")
        real_recipe = recipe(recipe_name) if recipe_name is not None else recipe_for_model(model or "")
        if data_dir is None:
            fail(f"the recipe {real_recipe.name} needs --data-dir (its task {real_recipe.task}'s folder)")
        real = recipe_config(
            real_recipe, out=out, data_dir=data_dir, model=model,
            rl={"steps": steps, "learning_rate": lr, "per_device_batch": per_device_batch}, warm_start_steps=sft_steps,
            heldout_size=heldout_size, threads=threads,
        )  # fmt: skip
        config = AblateConfig(out=out, seeds=seeds, arms=chosen, real=real, real_task=real_recipe.task,
                              data_dir=data_dir)  # fmt: skip
    else:
        if data_dir is not None or sft_steps is not None or heldout_size is not None:
            fail("--data-dir, --sft-steps and --heldout-size are a recipe's: use them with --recipe or --model")
        config = (
            AblateConfig.quick(out, seeds=seeds, arms=chosen, threads=threads or 1)
            if quick
            else AblateConfig(out=out, seeds=seeds, arms=chosen, threads=threads or 1)
        )
        given: dict[str, Any] = {"steps": steps, "learning_rate": lr, "per_device_batch": per_device_batch}
        config = replace(config, rl=replace(config.rl, **{k: v for k, v in given.items() if v is not None}))
    prepare_out(out)
    with progress_bar("{task.description}", console=stderr, quiet=as_json) as progress:

        def phase(description: str, total: int):  # type: ignore[no-untyped-def]
            job = progress.add_task(description, total=total)
            return lambda n: progress.advance(job, n)

        result = run_ablate(config, phase)
    rl = config.base_rl
    settings = {
        "seeds": seeds, "arms": list(chosen), "steps": rl.steps, "quick": quick,
        "threads": config.threads if config.real is None else config.real.threads,
        "recipe": recipe_name, "model": None if config.real is None else config.real.model,
        "sft_steps": config.warm_start_steps, "prompts_per_step": rl.prompts_per_step,
        "generations": rl.generations, "lr": rl.learning_rate, "temperature": rl.temperature, "turns": rl.turns,
        "per_device_batch": rl.per_device_batch,
    }  # fmt: skip
    run = RunSummary("ablate", settings, summary(result))
    data = run.to_dict()
    write_run(out, run, records(result), report(result, data, out))
    write_view(out, view, quiet=as_json)
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    table = Table(title=f"held-out EX by arm (greedy, single turn; {held_out_words(config)})", header_style="bold")
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
