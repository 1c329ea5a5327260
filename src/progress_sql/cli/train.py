"""``progress-sql train``: the whole loop on the embedded default, or RL for a real model.

The run folder holds ``report.md`` and the plots (``training.report``), ``summary.json`` (the run's
numbers with the command's settings and versions), ``samples.jsonl`` (one record per RL step of each
reward's run, the rows of ``rl/metrics.jsonl`` with ``run_reward`` naming the run), the checkpoints
and, for a ``--task`` run, ``dropped.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from progress_sql.cli._common import (
    ALGORITHMS,
    add_command,
    algorithm_option,
    data_dir_option,
    fail,
    json_option,
    out_dir_option,
    stderr,
    stdout,
    task_option,
    warn,
)
from progress_sql.progress import progress_bar
from progress_sql.runfolder import RunFolder, RunSummary


def train_command(
    out: Path = out_dir_option(Path("runs/train"), also="plots, checkpoints; a rerun with it resumes"),
    model: str = typer.Option("tiny", "--model", help="tiny / small (built here), or a model folder or hub name."),
    algorithm: str = algorithm_option(),
    legacy_preset: str | None = typer.Option(
        None, "--preset", hidden=True, help=f"Deprecated name of --algorithm ({' or '.join(ALGORITHMS)})."
    ),
    reward: str = typer.Option("progressive", "--reward", help="Reward name from the registry."),
    compare_reward: str | None = typer.Option(
        None, "--compare-reward", help="Also train with this reward (same data, seed, steps) and compare."
    ),
    turns: int = typer.Option(2, "--turns", help="Turn budget T (the tiny default uses 2; the paper 4)."),
    steps: int | None = typer.Option(None, "--steps", help="RL steps (embedded default 300)."),
    lr: float | None = typer.Option(None, "--lr", help="RL learning rate (embedded default 2e-4; else 5e-5)."),
    temperature: float | None = typer.Option(
        None, "--temperature", help="RL sampling temperature (embedded default 0.5; else the paper's 1.0)."
    ),
    sft_steps: int = typer.Option(
        600, "--sft-steps", help="Optimizer steps of the supervised warm start (a step budget: seeds reproduce)."
    ),
    task: str | None = task_option(required=False),
    data_dir: Path | None = data_dir_option(),
    data_filter: str = typer.Option(
        "rl-default",
        "--filter",
        help="Gold-audit filter for --task training data: none, rl-default or strict (dropped.jsonl in --out).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the data split, the warm start and RL."),
    threads: int = typer.Option(1, "--threads", help="Torch threads (one per idle core)."),
    vllm: str | None = typer.Option(
        None, "--vllm", help="Generate rollouts with vLLM inside TRL: colocate or server (GPU, vllm installed)."
    ),
    as_json: bool = json_option(),
) -> None:
    """Train with multi-turn RL and the progressive reward; with no options, the embedded CPU default."""
    from progress_sql.training.recipe import TrainConfig, default_rl_settings

    if legacy_preset is not None:  # kept for one release: --preset is the comparison semantics elsewhere
        warn("train --preset is deprecated and will be removed: use --algorithm (--preset names comparison semantics)")
        algorithm = legacy_preset
    # training.rl still calls the algorithm its "preset"
    rl = default_rl_settings(
        model, preset=algorithm, reward=reward, turns=turns, steps=steps, learning_rate=lr,
        temperature=temperature, seed=seed, vllm_mode=vllm,
    )  # fmt: skip
    config = TrainConfig(
        out=out, model=model, rl=rl, compare_reward=compare_reward, sft_steps=sft_steps, seed=seed,
        threads=threads, data_filter=data_filter,
    )  # fmt: skip
    if not config.embedded and task is None:
        fail("a real model needs --task (and --data-dir): the embedded data only fits the tiny models")
    with progress_bar("{task.description}", console=stderr) as progress:

        def phase(description: str, total: int):  # type: ignore[no-untyped-def]
            job = progress.add_task(description, total=total)
            return lambda n: progress.advance(job, n)

        if config.embedded:
            from progress_sql.training.recipe import run_embedded

            result = run_embedded(config, phase)
        else:
            from progress_sql.training.recipe import run_pretrained

            result = run_pretrained(config, task or "", data_dir, phase)
    from progress_sql.training.report import summary, write_report

    report = write_report(result, out)
    settings = {
        "model": model, "algorithm": algorithm, "reward": reward, "compare_reward": compare_reward, "turns": turns,
        "steps": config.rl.steps, "lr": config.rl.learning_rate, "temperature": config.rl.temperature,
        "sft_steps": sft_steps, "task": task, "data_dir": str(data_dir) if data_dir else None,
        "filter": data_filter, "seed": seed, "threads": threads, "vllm": vllm,
    }  # fmt: skip
    run = RunSummary("train", settings, summary(result))
    # write_report wrote summary.json without the command's settings and versions: the run folder's replaces it
    folder = RunFolder(out)
    folder.write_summary(run)
    folder.write_records(_step_records(result.rl))
    if as_json:
        typer.echo(json.dumps(run.to_dict(), indent=2))
        return
    table = Table(title="held-out execution accuracy (greedy, single turn)", header_style="bold")
    for column in ("set", "n", "before RL", "after RL"):
        table.add_column(column, justify="right")
    for name, before in result.before.items():
        after = result.after.get(name)
        table.add_row(name, str(before.n), f"{100 * before.ex:.1f}% +- {100 * before.standard_error:.1f}",
                      f"{100 * after.ex:.1f}% +- {100 * after.standard_error:.1f}" if after else "-")  # fmt: skip
    stdout.print(table)
    headline = summary(result)["heldout"]
    if headline:
        stdout.print(
            f"pooled held-out template EX (n = {headline['n']}): {100 * headline['ex_before']:.1f}% -> "
            f"{100 * headline['ex_after']:.1f}%, paired change {100 * headline['diff']:+.1f} points "
            f"(SE {100 * headline['se_diff']:.1f})"
        )
    stdout.print(result.guard)
    for warning in result.warnings:
        stdout.print(f"warning: {warning}")
    stdout.print(f"report: {report}")


def _step_records(runs: dict[str, Any]) -> list[dict[str, Any]]:
    """samples.jsonl of a training run: every logged RL step of every reward's run."""
    return [{"run_reward": reward, **step} for reward, run in runs.items() for step in run.metrics]


def register(app: typer.Typer) -> None:
    add_command(app, "train", train_command)
