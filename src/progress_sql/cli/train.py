"""``progress-sql train``: the whole loop on the embedded default, or RL for a real model."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from progress_sql.cli._common import fail, stderr, stdout
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.progress import progress_bar


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train_command(
        out: Path = typer.Option(Path("runs/train"), "--out", help="Run folder (a rerun with it resumes)."),
        model: str = typer.Option("tiny", "--model", help="tiny / small (built here), or a model folder or hub name."),
        preset: str = typer.Option("grpo", "--preset", help="Trainer preset: grpo or gspo."),
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
        task: str | None = typer.Option(None, "--task", help="Dataset for a real model (task name or questions file)."),
        data_dir: Path | None = typer.Option(None, "--data-dir", help="Data folder of --task."),
        data_filter: str = typer.Option(
            "rl-default",
            "--filter",
            help="Gold-audit filter for --task training data: none, rl-default or strict (dropped.jsonl in --out).",
        ),
        seed: int = typer.Option(0, "--seed"),
        threads: int = typer.Option(1, "--threads", help="Torch threads (one per idle core)."),
        vllm: str | None = typer.Option(
            None, "--vllm", help="Generate rollouts with vLLM inside TRL: colocate or server (GPU, vllm installed)."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print summary.json to stdout."),
    ) -> None:
        """Train with multi-turn RL and the progressive reward; with no options, the embedded CPU default."""
        from progress_sql.training.recipe import TrainConfig, default_rl_settings

        try:
            config = TrainConfig(
                out=out,
                model=model,
                rl=default_rl_settings(
                    model,
                    preset=preset,
                    reward=reward,
                    turns=turns,
                    steps=steps,
                    learning_rate=lr,
                    temperature=temperature,
                    seed=seed,
                    vllm_mode=vllm,
                ),
                compare_reward=compare_reward,
                sft_steps=sft_steps,
                seed=seed,
                threads=threads,
                data_filter=data_filter,
            )
        except ConfigError as error:
            fail(str(error))
        if not config.embedded and task is None:
            fail("a real model needs --task (and --data-dir): the embedded data only fits the tiny models")
        with progress_bar("{task.description}", console=stderr) as progress:

            def phase(description: str, total: int):  # type: ignore[no-untyped-def]
                job = progress.add_task(description, total=total)
                return lambda n: progress.advance(job, n)

            try:
                if config.embedded:
                    from progress_sql.training.recipe import run_embedded

                    result = run_embedded(config, phase)
                else:
                    from progress_sql.training.recipe import run_pretrained

                    result = run_pretrained(config, task or "", data_dir, phase)
            except (ConfigError, DatasetError) as error:
                fail(str(error))
        from progress_sql.training.report import summary, write_report

        report = write_report(result, out)
        if as_json:
            typer.echo(json.dumps(summary(result), indent=2))
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
