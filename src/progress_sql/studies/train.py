"""``train`` as a library call: :class:`TrainRequest` (what the command's options say) ->
:func:`train_config` (a recipe's settings under the options given) -> :func:`run_train` (the run, and
its folder written once: ``summary.json`` with the settings and versions, ``samples.jsonl``, the
plots and ``report.md``). The CLI parses, calls and prints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from progress_sql.errors import ConfigError
from progress_sql.execution.engines import engine_settings
from progress_sql.profiles import DEFAULT_PROFILE, get_profile
from progress_sql.progress import Phase
from progress_sql.runfolder import RunSummary
from progress_sql.training.recipe import (
    EMBEDDED_SIZES,
    RL_CHECK_EVERY,
    RL_SELECT,
    SFT_STEPS,
    SFT_TARGET,
    RunResult,
    TrainConfig,
    default_rl_settings,
)
from progress_sql.training.rl import LoraSettings, world_rank
from progress_sql.training.selection import RLSelect

#: The RL settings a request may override, by :class:`~progress_sql.training.rl.RLSettings` field.
RL_OVERRIDES = (
    "turns", "steps", "learning_rate", "temperature", "generations", "prompts_per_step", "per_device_batch",
    "max_new_tokens", "max_completion_tokens", "timeout_s", "save_steps", "save_total_limit",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TrainRequest:
    """One ``train`` run as its options give it; None: the recipe's value, else the model's default."""

    out: Path = Path("runs/train")
    model: str | None = None
    recipe: str | None = None
    prompt: str | None = None
    algorithm: str = "grpo"
    #: The profile (``progress_sql.profiles``) of the rollouts' environment and, unless ``reward`` is
    #: given, the reward; a real model's trainer defaults are the profile's trainer setting.
    profile: str = DEFAULT_PROFILE
    reward: str | None = None
    compare_reward: str | None = None
    #: RL settings given (keys of :data:`RL_OVERRIDES`; None values are not given).
    rl: Mapping[str, Any] = field(default_factory=dict)
    report_to: tuple[str, ...] = ()
    lora: LoraSettings | None = None
    rl_prompts: int | None = None
    sft_steps: int | None = None
    trainable_layers: int | None = None
    heldout_size: int | None = None
    sft_target: float = SFT_TARGET
    rl_select: str = RL_SELECT
    rl_check_every: int = RL_CHECK_EVERY
    task: str | None = None
    data_dir: Path | None = None
    data_filter: str = "rl-default"
    suite: Path | None = None
    allow_eval_overlap: bool = False
    eval_data_dirs: tuple[Path, ...] = ()
    seed: int = 0
    threads: int | None = None
    vllm: str | None = None
    vllm_gpu_memory: float = 0.3
    #: ``--vllm server``'s server (None: TRL's defaults); refused with any other ``vllm``.
    vllm_server_host: str | None = None
    vllm_server_port: int | None = None
    vllm_server_timeout: float | None = None
    backend_db: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.rl) - set(RL_OVERRIDES)
        if unknown:
            raise ConfigError(f"not RL settings a run may override: {sorted(unknown)}")


@dataclass(frozen=True, slots=True)
class TrainRun:
    """A finished run: the result, the ``summary.json`` written and the report's path (None on a
    process of an ``accelerate launch`` that is not the main one: it writes nothing)."""

    request: TrainRequest
    config: TrainConfig
    result: RunResult
    summary: RunSummary | None
    report: Path | None


def train_config(request: TrainRequest) -> TrainConfig:
    """The run's configuration: a recipe's settings (``--recipe``) under the options given, then the
    model's defaults. A bad combination raises :class:`ConfigError`."""
    chosen = None
    if request.recipe is not None:
        from progress_sql.training.pretrained import first_present, recipe

        chosen = recipe(request.recipe)
    elif request.heldout_size is not None:
        raise ConfigError("--heldout-size sets a recipe's held-out set: use it with --recipe")
    profile = get_profile(request.profile)
    model = request.model or (chosen.model if chosen else "tiny")
    given = {key: value for key, value in request.rl.items() if value is not None}
    rl = default_rl_settings(
        model, preset=request.algorithm, reward=request.reward or profile.reward.value, profile=profile.name,
        **(dict(chosen.rl) if chosen else {}) | given,
        report_to=request.report_to, seed=request.seed, vllm_mode=request.vllm,
        vllm_gpu_memory=request.vllm_gpu_memory, vllm_server_host=request.vllm_server_host,
        vllm_server_port=request.vllm_server_port, vllm_server_timeout=request.vllm_server_timeout,
        env=_env_settings(request.suite, request.backend_db), lora=request.lora,
    )  # fmt: skip
    embedded = model in EMBEDDED_SIZES
    rl_prompts = request.rl_prompts if request.rl_prompts is not None else (chosen.rl_prompts if chosen else None)
    config = TrainConfig(
        out=request.out, model=model, rl=rl, compare_reward=request.compare_reward, seed=request.seed,
        sft_steps=SFT_STEPS if request.sft_steps is None or chosen is not None else request.sft_steps,
        sft_target=request.sft_target or None, rl_select=cast(RLSelect, request.rl_select),
        rl_check_every=request.rl_check_every,
        threads=request.threads or (chosen.threads if chosen else 1), data_filter=request.data_filter,
        allow_eval_overlap=request.allow_eval_overlap, eval_data_dirs=tuple(str(d) for d in request.eval_data_dirs),
        rl_prompts=rl_prompts if rl_prompts is not None else (TrainConfig().rl_prompts if embedded else None),
        prompt=request.prompt or (chosen.prompt if chosen else "paper"),
        questions=None if chosen is None else first_present(request.data_dir, chosen.questions),
        warm_start=None if chosen is None else replace(
            chosen.warm_start, steps=chosen.warm_start.steps if request.sft_steps is None else request.sft_steps
        ),
        heldout=None if chosen is None else replace(chosen.heldout, size=request.heldout_size or chosen.heldout.size),
        trainable_layers=chosen.trainable_layers if request.trainable_layers is None and chosen
        else request.trainable_layers,
    )  # fmt: skip
    if not config.embedded and _task(request) is None:
        raise ConfigError("a real model needs --task (and --data-dir): the embedded data only fits the tiny models")
    return config


def run_train(request: TrainRequest, phase: Phase) -> TrainRun:
    """Run ``train``: the embedded default's whole loop, a real model's recipe, or RL for a real model;
    the main process then writes the run folder (``request.out``)."""
    config = train_config(request)
    task = _task(request) or ""
    if config.embedded:
        from progress_sql.training.recipe import run_embedded

        result = run_embedded(config, phase)
    elif config.warm_start is not None:
        from progress_sql.training.pretrained import run_real

        result = run_real(config, task, request.data_dir, phase)
    else:
        from progress_sql.training.recipe import run_pretrained

        result = run_pretrained(config, task, request.data_dir, phase)
    if world_rank() != 0:  # one report per run: the main process of an `accelerate launch` writes it
        return TrainRun(request, config, result, None, None)
    from progress_sql.studies.report import train_summary, write_train_run

    run = train_summary(result, train_settings(request, config))
    return TrainRun(request, config, result, run, write_train_run(result, request.out, run))


def train_settings(request: TrainRequest, config: TrainConfig) -> dict[str, Any]:
    """``summary.json``'s settings: every option as the run used it."""
    rl = config.rl
    return {
        "model": config.model, "recipe": request.recipe, "prompt": config.prompt, "algorithm": request.algorithm,
        "profile": get_profile(rl.profile).settings(), "reward": rl.reward,
        "compare_reward": request.compare_reward,
        "turns": rl.turns, "steps": rl.steps, "lr": rl.learning_rate,
        "temperature": rl.temperature, "generations": rl.generations,
        "prompts_per_step": rl.prompts_per_step, "per_device_batch": rl.per_device_batch,
        "max_turn_tokens": rl.max_new_tokens, "max_completion_tokens": rl.completion_tokens,
        "rl_prompts": config.rl_prompts, "rollout_timeout": rl.timeout_s, "save_steps": rl.save_steps,
        "save_total_limit": rl.save_total_limit, "report_to": list(rl.report_to),
        "lora": rl.lora.peft_kwargs() if rl.lora else None,
        "sft_steps": config.sft_steps if config.warm_start is None else config.warm_start.steps,
        "heldout": None if config.heldout is None else {"task": config.heldout.task, "size": config.heldout.size},
        "task": _task(request), "questions": config.questions,
        "sft_target": request.sft_target or None, "rl_check_every": request.rl_check_every,
        # a --task run has no validation set to choose on
        "rl_select": request.rl_select if config.model in EMBEDDED_SIZES else "last",
        "data_dir": str(request.data_dir) if request.data_dir else None, "filter": request.data_filter,
        "seed": request.seed, "threads": config.threads,
        "vllm": request.vllm, "vllm_gpu_memory": request.vllm_gpu_memory,
        "vllm_server_host": rl.vllm_server_host, "vllm_server_port": rl.vllm_server_port,
        "vllm_server_timeout": rl.vllm_server_timeout,
        "suite": str(request.suite) if request.suite else None, "allow_eval_overlap": request.allow_eval_overlap,
        "engine": None if request.backend_db is None else engine_settings(request.backend_db),
    }  # fmt: skip


def _task(request: TrainRequest) -> str | None:
    """The training task: the option's, else the recipe's."""
    if request.task is not None or request.recipe is None:
        return request.task
    from progress_sql.training.pretrained import recipe

    return recipe(request.recipe).task


def _env_settings(suite: Path | None, backend_db: str | None) -> dict[str, str] | None:
    """The environment settings ``--suite`` and ``--backend-db`` give RL (None: the defaults)."""
    settings = {"suite": None if suite is None else str(suite), "backend_db": backend_db}
    return {name: value for name, value in settings.items() if value is not None} or None
