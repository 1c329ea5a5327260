"""The RL phase of ``progress-sql train``: multi-turn GRPO / GSPO with our environment, through
TRL (:mod:`progress_sql.integrations.trl` builds the trainer).

Per step, ``metrics.jsonl`` gets TRL's own logs (reward and each component, reward std, the share of
groups with zero reward variance, completion length, clip ratios, loss) merged with trajectory
statistics from the rollout function (turns per trajectory, success and first-correct turn,
first-turn F and EX); ``rollouts.jsonl`` gets every trajectory (its example, turn records and reward:
what ``progress-sql inspect`` reads of a training run). Checkpoints go to ``<out>/checkpoints``; a
rerun resumes from the last one.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from progress_sql.env.core import EnvConfig
from progress_sql.env.settings import env_config_from_profile
from progress_sql.errors import ConfigError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import example_fields
from progress_sql.integrations.trl import (
    ModelGenerator,
    TokenGenerator,
    TrlRollout,
    VLLMGenerator,
    cpu_lm_head,
    grpo_trainer,
    reduced_across_processes,
    trainer_preset,
)
from progress_sql.jsonio import dumps_line
from progress_sql.models import without_cudnn_attention
from progress_sql.profiles import DEFAULT_PROFILE
from progress_sql.prompts import ConversationFormat
from progress_sql.rewards.registry import get_reward
from progress_sql.runfolder import ROLLOUTS_FILE
from progress_sql.types import Example, plain

#: The environment settings that :class:`RLSettings` sets under its own names.
_OWN_ENV_FIELDS = {"max_turns": "turns", "reward": "reward", "timeout_s": "timeout_s"}

#: Logging backends TRL (transformers' ``report_to``) can send the step logs to; ``none`` keeps them in
#: ``metrics.jsonl`` and the console progress bar only.
REPORT_BACKENDS = ("none", "tensorboard", "wandb")


@dataclass(frozen=True, slots=True)
class LoraSettings:
    """LoRA adapters (PEFT) instead of full fine-tuning: rank ``r``, scale ``alpha`` and the modules that
    get adapters (PEFT's ``all-linear``: every linear layer but the output head)."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: tuple[str, ...] = ("all-linear",)

    def __post_init__(self) -> None:
        if self.r < 1 or self.alpha < 1 or not 0.0 <= self.dropout < 1.0 or not self.target_modules:
            raise ConfigError("LoRA needs r >= 1, alpha >= 1, 0 <= dropout < 1 and at least one target module")

    def peft_kwargs(self) -> dict[str, Any]:
        """``peft.LoraConfig``'s keyword arguments (PEFT reads one string as a shortcut like ``all-linear``).

        >>> LoraSettings(r=8).peft_kwargs()["target_modules"]
        'all-linear'
        """
        modules: str | list[str] = (
            self.target_modules[0] if len(self.target_modules) == 1 else list(self.target_modules)
        )
        return {"r": self.r, "lora_alpha": self.alpha, "lora_dropout": self.dropout, "target_modules": modules}


@dataclass(frozen=True, slots=True)
class RLSettings:
    """The RL phase's knobs; defaults are the CPU default run's. The rollouts' environment is the
    ``profile``'s (``progress_sql.profiles``) with ``env`` on top: any further :class:`EnvConfig` field
    (``feedback``, ``preset``, ``progressive``, ...)."""

    preset: str = "grpo"
    reward: str = "progressive"
    turns: int = 2
    steps: int = 40
    #: Prompts per optimizer step, over all processes (each sampled ``generations`` times).
    prompts_per_step: int = 4
    generations: int = 8
    learning_rate: float = 5e-5
    #: Token budget of one model turn.
    max_new_tokens: int = 48
    #: Token budget of a whole completion (every model turn and feedback turn); None: ``turns`` x
    #: (``max_new_tokens`` + 40), room for a short feedback turn after each answer.
    max_completion_tokens: int | None = None
    temperature: float = 1.0
    #: beta of the KL term beta x D_KL(pi_theta || pi_ref) in the loss (TRL's ``beta``; > 0 loads a
    #: reference model, none with LoRA); 0: no KL term, as the CPU runs were measured.
    kl_coef: float = 0.0
    #: Optimizer updates per generated batch: a rollout batch is ``updates_per_batch`` x
    #: ``prompts_per_step`` prompts, each sample used in one update (the GSPO preset makes its own 4).
    updates_per_batch: int = 1
    timeout_s: float = 2.0
    save_steps: int = 10
    #: Checkpoints kept under ``<out>/checkpoints`` (the oldest are deleted); None: all.
    save_total_limit: int | None = None
    #: Sequences per process in one forward/backward pass; the step's ``prompts_per_step`` x
    #: ``generations`` sequences are reached by gradient accumulation. None: the whole step at once.
    per_device_batch: int | None = None
    #: Where TRL sends the step logs besides ``metrics.jsonl``: :data:`REPORT_BACKENDS`.
    report_to: tuple[str, ...] = ("none",)
    #: LoRA adapters instead of full fine-tuning; None: every weight trains.
    lora: LoraSettings | None = None
    seed: int = 0
    use_cpu: bool = True
    #: The forward and backward passes' precision; the weights (the optimizer's master copy) stay fp32
    #: either way (:func:`progress_sql.models.load_causal_lm`). ``bf16``: autocast (TRL's default, on a
    #: CPU too); ``fp32``: none. None: TRL's default.
    compute_dtype: str | None = None
    #: Generate with vLLM inside TRL (a GPU and the vllm package): ``colocate`` or ``server``; None: the
    #: trainer's own model.
    vllm_mode: str | None = None
    #: Share of each GPU the colocated vLLM engine may take (TRL's default 0.3).
    vllm_gpu_memory: float = 0.3
    #: The ``trl vllm-serve`` server of ``vllm_mode`` server: host, port and the seconds the trainer waits
    #: for its ``/health`` (GRPOConfig ``vllm_server_host``/``_port``/``_timeout``); None: TRL's defaults
    #: (0.0.0.0, 8000, 240 s). Only with ``vllm_mode`` server.
    vllm_server_host: str | None = None
    vllm_server_port: int | None = None
    vllm_server_timeout: float | None = None
    env: Mapping[str, Any] = field(default_factory=dict)
    #: The profile the environment starts from (``progress_sql.profiles.PROFILES``).
    profile: str = DEFAULT_PROFILE

    def __post_init__(self) -> None:
        if self.turns < 1:
            raise ConfigError(f"the turn budget T must be >= 1, got {self.turns}")
        if self.steps < 1 or self.prompts_per_step < 1 or self.generations < 2:
            raise ConfigError("RL needs steps >= 1, prompts_per_step >= 1 and generations >= 2 (a group)")
        if self.kl_coef < 0 or self.updates_per_batch < 1:
            raise ConfigError(
                f"RL needs kl_coef >= 0 and updates_per_batch >= 1, got {self.kl_coef} and {self.updates_per_batch}"
            )
        if self.max_new_tokens < 1 or self.completion_tokens < self.max_new_tokens:
            raise ConfigError(
                f"token budgets: a turn needs >= 1 token and the whole completion ({self.completion_tokens}) at "
                f"least one turn's ({self.max_new_tokens})"
            )
        if self.save_total_limit is not None and self.save_total_limit < 1:
            raise ConfigError(f"save_total_limit must be >= 1 (or None: keep all), got {self.save_total_limit}")
        if self.per_device_batch is not None and self.per_device_batch < 1:
            raise ConfigError(f"per_device_batch must be >= 1, got {self.per_device_batch}")
        unknown = [name for name in self.report_to if name not in REPORT_BACKENDS]
        if unknown or not self.report_to or ("none" in self.report_to and len(self.report_to) > 1):
            raise ConfigError(
                f"report_to takes none or any of {', '.join(REPORT_BACKENDS[1:])}, got {','.join(self.report_to)}"
            )
        get_reward(self.reward)
        trainer_preset(self.preset)
        if self.compute_dtype not in (None, "bf16", "fp32"):
            raise ConfigError(f"compute_dtype must be bf16 or fp32, got {self.compute_dtype!r}")
        if self.vllm_mode not in (None, "colocate", "server"):
            raise ConfigError(f"vllm_mode must be colocate or server, got {self.vllm_mode!r}")
        if not 0.0 < self.vllm_gpu_memory < 1.0:
            raise ConfigError(f"vllm_gpu_memory is a share of the GPU in (0, 1), got {self.vllm_gpu_memory}")
        self._check_vllm_server()
        self.env_config()

    def _check_vllm_server(self) -> None:
        """The server settings: only for ``vllm_mode`` server, a TCP port, a positive timeout."""
        given = [name for name, value in self.vllm_server.items() if value is not None]
        if given and self.vllm_mode != "server":
            flags = ", ".join("--" + name.replace("_", "-") for name in given)
            mode = self.vllm_mode or "off"
            raise ConfigError(f"{flags}: only with --vllm server (vllm_mode server), got --vllm {mode}")
        if self.vllm_server_host == "":
            raise ConfigError("vllm_server_host must name a host, got ''")
        if self.vllm_server_port is not None and not 0 < self.vllm_server_port < 65536:
            raise ConfigError(f"vllm_server_port must be a TCP port (1-65535), got {self.vllm_server_port}")
        if self.vllm_server_timeout is not None and self.vllm_server_timeout <= 0:
            raise ConfigError(f"vllm_server_timeout must be > 0 seconds, got {self.vllm_server_timeout}")

    @property
    def vllm_server(self) -> dict[str, Any]:
        """GRPOConfig's server fields as these settings give them (None: not given)."""
        return {
            "vllm_server_host": self.vllm_server_host,
            "vllm_server_port": self.vllm_server_port,
            "vllm_server_timeout": self.vllm_server_timeout,
        }

    @property
    def completion_tokens(self) -> int:
        """The whole completion's token budget (see ``max_completion_tokens``)."""
        return self.max_completion_tokens or self.turns * (self.max_new_tokens + 40)

    def env_config(self) -> EnvConfig:
        """The rollouts' environment: the profile's, ``env`` and the turn budget, reward and timeout of
        these settings on top."""
        clash = sorted(key for key in self.env if key in _OWN_ENV_FIELDS)
        if clash:
            own = ", ".join(_OWN_ENV_FIELDS[key] for key in clash)
            raise ConfigError(f"RLSettings.env sets {', '.join(clash)}: give them as RLSettings {own}")
        own_values = {"max_turns": self.turns, "reward": self.reward, "timeout_s": self.timeout_s}
        return env_config_from_profile(self.profile, {**self.env, **own_values}, source="RLSettings.env")


@dataclass(frozen=True, slots=True)
class RLResult:
    steps: int
    seconds: float
    metrics: list[dict[str, Any]] = field(default_factory=list)
    resumed_from: str | None = None
    #: What the trainer computed in (``bf16 autocast`` or ``fp32``) and its parameters' dtypes.
    precision: dict[str, Any] = field(default_factory=dict)


#: Group rewards whose standard deviation is below this count as tied (float noise in R_align reaches 1e-8).
TIE_TOLERANCE = 1e-6


def group_statistics(
    components: Sequence[Mapping[str, float]], group_size: int, tolerance: float = TIE_TOLERANCE
) -> dict[str, float]:
    """Per-call statistics of the reward groups (consecutive runs of ``group_size`` trajectories, as
    TRL repeats each prompt): the share of groups whose total reward is tied (standard deviation below
    ``tolerance``; TRL's own ``frac_reward_zero_std`` counts float noise as variance), and for each
    component its mean within-group standard deviation and its share of the within-group variance of
    the total (covariance with the total over the total's variance: which terms carry the advantage).

    >>> stats = group_statistics([{"late": 2.0, "align": -0.1}, {"late": 0.0, "align": -0.1 + 1e-9}] * 2, 2)
    >>> stats["groups/zero_variance_share"], round(stats["groups/variance_share/late"], 6)
    (0.0, 1.0)
    >>> group_statistics([{"late": 2.0}, {"late": 2.0 + 1e-9}], 2)["groups/zero_variance_share"]
    1.0
    """
    groups = [components[i : i + group_size] for i in range(0, len(components) - group_size + 1, group_size)]
    if not groups:
        return {}
    names = sorted({name for parts in components for name in parts})
    tied = 0
    total_variance = 0.0
    covariance = dict.fromkeys(names, 0.0)
    spread = dict.fromkeys(names, 0.0)
    for group in groups:
        totals = [sum(parts.values()) for parts in group]
        mean = statistics.fmean(totals)
        if statistics.pstdev(totals) < tolerance:
            tied += 1
            continue
        total_variance += statistics.pvariance(totals)
        for name in names:
            values = [parts.get(name, 0.0) for parts in group]
            centre = statistics.fmean(values)
            covariance[name] += statistics.fmean((v - centre) * (t - mean) for v, t in zip(values, totals, strict=True))
            spread[name] += statistics.pstdev(values)
    stats = {"groups/zero_variance_share": tied / len(groups)}
    for name in names:
        stats[f"groups/std/{name}"] = spread[name] / len(groups)
        stats[f"groups/variance_share/{name}"] = covariance[name] / total_variance if total_variance else 0.0
    return stats


def late_by_first_correct_turn(components: Sequence[Mapping[str, float]], k_stars: Sequence[int]) -> dict[str, float]:
    """The mean latency term R_late of the trajectories whose first correct turn is k, per k (a reward
    without a ``late`` component logs nothing): what the decay gamma pays for a late success.

    >>> late_by_first_correct_turn([{"late": 2.0}, {"late": 1.0}, {"late": 0.0}], [1, 2, 0])
    {'trajectory/late_at_first_correct/1': 2.0, 'trajectory/late_at_first_correct/2': 1.0}
    """
    by_turn: dict[int, list[float]] = {}
    for parts, k in zip(components, k_stars, strict=True):
        if k and "late" in parts:
            by_turn.setdefault(int(k), []).append(float(parts["late"]))
    return {f"trajectory/late_at_first_correct/{k}": statistics.fmean(v) for k, v in sorted(by_turn.items())}


#: The RL phase's episode log beside ``metrics.jsonl`` (one line per trajectory; ``progress-sql inspect``
#: reads it). Processes other than the main one write ``rollouts-rank<r>.jsonl``.


def rollout_log_path(out: Path, rank: int = 0) -> Path:
    """Where process ``rank`` of an RL phase writing into ``out`` logs its episodes."""
    return out / (ROLLOUTS_FILE if rank == 0 else f"rollouts-rank{rank}.jsonl")


def episode_records(rollout: TrlRollout, output: Mapping[str, Any], step: int) -> list[dict[str, Any]]:
    """One record per trajectory of the rollout's last call: the optimizer step it was generated for,
    its example (the export row codec's fields, so the log is readable without the training data), its
    turn records as ``progress-sql rollout`` writes them and its reward (status ``gold_error`` when the
    gold could not be used: one unscored turn)."""
    records = []
    for position, (example, turns) in enumerate(zip(rollout.last_examples, rollout.last_records, strict=True)):
        components = dict(output["reward_components"][position])
        error = output["gold_error"][position]
        records.append({
            "step": step, "index": example.index, "db_id": example.db_id, "example": example_fields(example),
            "status": "gold_error" if error else "ok", "gold_error": error or None,
            "reward": {"total": round(sum(components.values()), 6), "components": components},
            "turns": [turn.to_dict() for turn in turns],
        })  # fmt: skip
    return records


class _TrajectoryStats:
    """Wraps the rollout function, keeps per-call trajectory statistics for the step logs and appends
    every episode to ``log`` (:func:`episode_records`)."""

    def __init__(self, rollout: TrlRollout, group_size: int, log: Path | None = None) -> None:
        self.rollout = rollout
        self.group_size = group_size
        self.log = log
        self.pending: dict[str, float] = {}

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        output = self.rollout(prompts, trainer)
        if self.log is not None:
            state = getattr(trainer, "state", None)
            step = int(getattr(state, "global_step", 0)) + 1  # generated for the next optimizer step
            with self.log.open("a", encoding="utf-8") as handle:
                for record in episode_records(self.rollout, output, step):
                    handle.write(dumps_line(plain(record)) + "\n")
        n = max(1, len(prompts))
        k_stars = [k for k in output["k_star"] if k]
        self.pending = {
            "trajectory/turns_mean": sum(output["num_turns"]) / n,
            "trajectory/success": len(k_stars) / n,
            "trajectory/first_correct_turn_mean": sum(k_stars) / len(k_stars) if k_stars else 0.0,
            "trajectory/first_turn_f": sum(output["first_turn_f"]) / n,
            "trajectory/first_turn_ex": sum(output["first_turn_match"]) / n,
            "trajectory/gold_error_share": sum(bool(error) for error in output["gold_error"]) / n,
            "trajectory/budget_stopped_share": sum(output["budget_stopped"]) / n,
            **group_statistics(output["reward_components"], self.group_size),
            **late_by_first_correct_turn(output["reward_components"], output["k_star"]),
        }
        return output


def _metrics_sink(
    path: Path, stats: _TrajectoryStats, sink: list[dict[str, Any]]
) -> Callable[[int, Mapping[str, Any]], None]:
    """Appends each optimizer step's log (TRL's numbers, already reduced over the processes by the
    trainer, and the pending trajectory statistics, reduced here: each process has its own episodes)
    to ``sink`` and, on the main process only, to ``path``: one row per step, whatever the process count."""

    def log(step: int, logs: Mapping[str, Any]) -> None:
        if "loss" not in logs:
            return
        record = {"step": step, **{k: v for k, v in logs.items() if isinstance(v, int | float)}}
        main, trajectories = reduced_across_processes(stats.pending)
        record.update(trajectories)
        stats.pending = {}
        sink.append(record)
        if main:
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    return log


def last_checkpoint(folder: Path) -> Path | None:
    """The newest ``checkpoint-N`` folder under ``folder``."""
    if not folder.is_dir():
        return None
    found = [p for p in folder.glob("checkpoint-*") if p.name.split("-")[-1].isdigit()]
    return max(found, key=lambda p: int(p.name.split("-")[-1])) if found else None


def world_size() -> int:
    """Training processes of this run: ``WORLD_SIZE`` as ``accelerate launch`` (torchrun) sets it; 1 alone."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def world_rank() -> int:
    """This process's rank among them (``RANK``; 0 alone)."""
    return int(os.environ.get("RANK", "0"))


def batch_layout(settings: RLSettings, processes: int) -> tuple[int, int]:
    """``(sequences per process and pass, gradient accumulation steps)`` that make one optimizer step of
    ``prompts_per_step`` x ``generations`` sequences over ``processes`` processes.

    >>> batch_layout(RLSettings(prompts_per_step=64, generations=8, per_device_batch=4), 8)
    (4, 16)
    >>> batch_layout(RLSettings(prompts_per_step=8, generations=8), 1)
    (64, 1)
    """
    sequences = settings.prompts_per_step * settings.generations
    per_device = settings.per_device_batch or sequences // processes
    if per_device < 1 or sequences % (per_device * processes):
        raise ConfigError(
            f"{settings.prompts_per_step} prompts x {settings.generations} samples = {sequences} sequences per step "
            f"do not split into passes of {per_device} sequences on {processes} processes: change prompts_per_step "
            "or per_device_batch"
        )
    return per_device, sequences // (per_device * processes)


def trainer_args(settings: RLSettings, out: Path, processes: int = 1) -> dict[str, Any]:
    """``GRPOConfig``'s keyword arguments for ``settings``, checkpoints under ``out/checkpoints``, on
    ``processes`` training processes."""
    per_device, accumulation = batch_layout(settings, processes)
    preset = dict(trainer_preset(settings.preset, accumulation, kl_coef=settings.kl_coef,
                                 updates_per_batch=settings.updates_per_batch).settings)  # fmt: skip
    preset["num_generations"] = settings.generations
    preset["temperature"] = settings.temperature
    vllm: dict[str, Any] = {}
    if settings.vllm_mode:
        # TRL's vLLM route samples max_completion_length tokens per generate call, i.e. per turn here;
        # generation_kwargs override its SamplingParams (colocate) or the server's request.
        vllm = {
            "vllm_mode": settings.vllm_mode,
            "vllm_gpu_memory_utilization": settings.vllm_gpu_memory,
            "generation_kwargs": {"max_tokens": settings.max_new_tokens},
            # server mode only (RLSettings refuses them otherwise); the ones not given keep TRL's defaults
            **{name: value for name, value in settings.vllm_server.items() if value is not None},
        }
    return {
        "output_dir": str(out / "checkpoints"),
        "use_cpu": settings.use_cpu,
        "per_device_train_batch_size": per_device,
        "max_steps": settings.steps,
        "max_completion_length": settings.completion_tokens,
        "learning_rate": settings.learning_rate,
        "lr_scheduler_type": "constant",
        "logging_steps": 1,
        "save_strategy": "steps",
        "save_steps": settings.save_steps,
        "save_total_limit": settings.save_total_limit,
        "report_to": list(settings.report_to),
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "seed": settings.seed,
        "use_vllm": settings.vllm_mode is not None,
        **_precision_args(settings),
        **vllm,
        **preset,
    }


def _precision_args(settings: RLSettings) -> dict[str, bool]:
    """TRL's ``bf16`` flag: as ``compute_dtype`` asks; without one, TRL's default (bf16 autocast, on a CPU
    too) where bf16 is native, and fp32 on a CPU without bf16 instructions (emulated bf16 costs about
    25 times fp32's time there: :data:`progress_sql.models.EMULATED_BF16_SLOWDOWN`)."""
    from progress_sql.models import native_bf16

    if settings.compute_dtype is not None:
        return {"bf16": settings.compute_dtype == "bf16"}
    return {} if not settings.use_cpu or native_bf16() else {"bf16": False}


def save_final(trainer: Any, tokenizer: Any, folder: Path, *, lora: bool) -> None:
    """The trained model as a Hugging Face folder that ``progress-sql eval`` and vLLM load. Through the
    trainer, which gathers DeepSpeed ZeRO-3 or FSDP shards (every process must call it). With LoRA the
    adapter goes to ``<folder>-adapter`` and, in a one-process run, the merged model to ``folder``
    (a sharded multi-process run keeps the adapter only: merge it on one GPU, docs/training.md)."""
    target = folder.with_name(f"{folder.name}-adapter") if lora else folder
    trainer.save_model(str(target))
    if lora and world_size() == 1:
        merged = trainer.accelerator.unwrap_model(trainer.model).merge_and_unload()
        merged.save_pretrained(folder)
    if trainer.accelerator.is_main_process:
        tokenizer.save_pretrained(folder)
        if lora:
            tokenizer.save_pretrained(target)


def run_rl(
    model: Any,
    tokenizer: Any,
    fmt: ConversationFormat,
    prompts: Sequence[tuple[str, Example]],
    settings: RLSettings,
    out: Path,
    pool: ExecutionPool,
    *,
    on_step: Callable[[int], None] | None = None,
    final: Path | None = None,
) -> RLResult:
    """Train ``model`` in place with multi-turn rollouts on ``prompts`` (the prompt text the model
    sees, and the example it asks about); with ``final``, save the trained model there
    (:func:`save_final`)."""
    if not prompts:
        raise ConfigError("RL needs at least one training prompt")
    out.mkdir(parents=True, exist_ok=True)
    args = trainer_args(settings, out, world_size())
    generator: TokenGenerator = (
        VLLMGenerator(tokenizer.eos_token_id)
        if settings.vllm_mode
        else ModelGenerator(tokenizer, settings.max_new_tokens, settings.temperature)
    )
    examples = [example for _, example in prompts]
    stats = _TrajectoryStats(
        TrlRollout(
            examples,
            tokenizer,
            fmt,
            generator,
            env_config=settings.env_config(),
            pool=pool,
            completion_budget=settings.completion_tokens,
        ),
        settings.generations,
        rollout_log_path(out, world_rank()),
    )
    metrics: list[dict[str, Any]] = []
    trainer = grpo_trainer(
        model, tokenizer, stats, [text for text, _ in prompts], reward=settings.reward, args=args,
        lora=settings.lora.peft_kwargs() if settings.lora else None,
        on_log=_metrics_sink(out / "metrics.jsonl", stats, metrics), on_step=on_step,
    )  # fmt: skip
    resume = last_checkpoint(out / "checkpoints")
    start = time.perf_counter()
    device_type = trainer.accelerator.device.type
    with cpu_lm_head(device_type), without_cudnn_attention(device_type):
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    precision = trainer_precision(trainer)  # before save_final: merging LoRA adapters leaves nothing trainable
    if final is not None:
        save_final(trainer, tokenizer, final, lora=settings.lora is not None)
    return RLResult(trainer.state.global_step, time.perf_counter() - start, metrics, str(resume) if resume else None,
                    precision)  # fmt: skip


def trainer_precision(trainer: Any) -> dict[str, Any]:
    """The trainer's compute precision and its trainable parameters' dtypes (the master weights)."""
    from progress_sql.models import weight_dtypes

    dtypes = weight_dtypes(trainer.accelerator.unwrap_model(trainer.model), trainable_only=True)
    # what accelerate applies (it can refuse a flag the device lacks), not only what the arguments asked
    mixed = str(getattr(trainer.accelerator, "mixed_precision", "no"))
    compute = "fp32" if mixed == "no" else f"{mixed} autocast"
    return {"compute": compute, "trainable_parameter_dtypes": dtypes}
