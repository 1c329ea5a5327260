"""``progress-sql ablate``: the paper's ablations (Table 3, and Table 13's GSPO) from one shared warm
start per seed.

For each seed the data and the supervised checkpoint are made once: the embedded default's
(:mod:`progress_sql.training.recipe`), or with ``AblateConfig.real`` a real model's recipe
(:mod:`progress_sql.training.pretrained`: Spider train questions, held-out Spider dev questions of other
databases). Every arm then starts RL from that checkpoint, on the same RL prompts, for the same number of
optimizer steps, and is measured on the same held-out questions (the template sets pooled, or the
recipe's held-out set), so each arm's EX is paired with the warm start's and with the progressive arm's.
Arms are a registry (:data:`ARMS`, labels in the paper's wording; former names in :data:`ARM_ALIASES`);
reward arms come from :mod:`progress_sql.rewards.ablations`.

Layout of ``out``: ``config.json``; ``seed-<s>/checkpoints/sft`` (the shared warm start),
``seed-<s>/warm.json`` (its measurement; a real model's ``checkpoints/sft/base.json`` holds the measurement
before the warm start); ``seed-<s>/arms/<arm>/`` with ``rl/metrics.jsonl``,
``final/`` (the policy), ``result.json`` and, written last, the completion marker ``done``. A rerun
with the same ``out`` reads a finished arm back and runs only the others; an arm's folder written under
its former name (``arms/no-late``) is that arm's. Keys: docs/training.md.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from progress_sql.errors import ConfigError
from progress_sql.evaluation.stats import Accuracy, PairedChange
from progress_sql.jsonio import read_json, read_json_lines
from progress_sql.profiles import DEFAULT_PROFILE, get_profile
from progress_sql.progress import Phase
from progress_sql.prompts import CompactFormat
from progress_sql.registry import lookup
from progress_sql.rewards.ablations import get_ablation
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.runfolder import RunFolder, RunSummary, prepared_folder, writing_results
from progress_sql.training.heldout import SetMeasurement
from progress_sql.training.recipe import EMBEDDED_RL, SFT_STEPS, SFT_TARGET, TrainConfig
from progress_sql.training.rl import RLSettings
from progress_sql.types import plain

#: The file whose presence says an arm finished (written after everything else of the arm).
DONE_MARKER = "done"
#: The held-out sets the arms are compared on (pooled): the template sets, as in ``train``'s headline.
HELDOUT_SETS = ("heldout_new_combo", "heldout_new_value", "heldout_rl_kind")


@dataclass(frozen=True, slots=True)
class Arm:
    """One row of the ablation table: how its RL settings differ from the base (the default run's).

    ``reward_ablation`` names an arm of :data:`progress_sql.rewards.ablations.ABLATIONS` applied to the
    base progressive configuration; ``reward``, ``turns``, ``algorithm`` and ``feedback`` (a kind of
    ``progress_sql.env.feedback``) replace the base's when given (the base's reward is its profile's
    progressive reward unless the run names another).
    """

    name: str
    label: str
    description: str
    reward: str | None = None
    reward_ablation: str | None = None
    turns: int | None = None
    algorithm: str | None = None
    feedback: str | None = None

    def settings(self, base: RLSettings, progressive: ProgressiveConfig) -> RLSettings:
        """``base`` changed as this arm says (validated: a constant reward raises ConfigError)."""
        env = dict(base.env)
        if self.feedback is not None:
            env["feedback"] = self.feedback
        if self.reward_ablation is not None:
            env["progressive"] = get_ablation(self.reward_ablation).apply(progressive)
        else:
            env["progressive"] = progressive
        return replace(
            base,
            reward=base.reward if self.reward is None else self.reward,
            turns=base.turns if self.turns is None else self.turns,
            preset=base.preset if self.algorithm is None else self.algorithm,
            env=env,
        )


ARMS: Mapping[str, Arm] = {
    arm.name: arm
    for arm in (
        Arm("progressive", "Progress-SQL (full reward)",
            "multi-turn GRPO with the progressive reward (the default run)"),
        Arm("one-shot", "Single-turn RL (T = 1, one-shot reward)",
            "the paper's Single-turn RL: no multi-turn rollout, no R_align, final-state rewards only (the one-shot "
            "execution reward)", reward="one-shot", turns=1),
        Arm("single-turn", "T = 1, progressive reward (ours)", "the progressive reward with one turn", turns=1),
        Arm("no-decay", "w/o per-turn decay (gamma = 1)",
            "R_late pays a late success as an early one (Appendix E.2)", reward_ablation="no-decay"),
        Arm("no-align", "w/o R_align", "alignment-progress term off", reward_ablation="no-align"),
        Arm("no-exec", "w/o R_exec", "execution-status transition term off", reward_ablation="no-exec"),
        Arm("execution-feedback", "Execution feedback (no gold)",
            "multi-turn GRPO with the progressive reward, each next turn the execution observation only (the "
            "error text or the first rows; SkyRL-SQL's kind), not the ODT's gold-derived tags: does the "
            "oracle's feedback train a better model than the natural baseline (issue 34)",
            feedback="execution"),
        Arm("gspo", "GSPO instead of GRPO (Table 13)",
            "the GSPO algorithm preset with the progressive reward: the paper's Table 13, not Table 3",
            algorithm="gspo"),
    )
}  # fmt: skip
#: Former arm names -> current ones: ``--arms no-late`` and folders written as ``arms/no-late`` keep working.
ARM_ALIASES: Mapping[str, str] = {"no-late": "no-decay"}
DEFAULT_ARMS: tuple[str, ...] = tuple(ARMS)


def get_arm(name: str) -> Arm:
    """The arm of a name or a former name (:data:`ARM_ALIASES`); ConfigError with the choices otherwise."""
    return lookup(ARMS, name, "ablation arm", aliases=ARM_ALIASES)


def arm_folder(arms: Path, arm: Arm) -> Path:
    """The arm's folder under ``arms``: ``arms/<name>``, or, where that is absent, the folder an earlier run
    wrote under a former name of the arm (:data:`ARM_ALIASES`), so that run is read back or resumed
    instead of repeated."""
    names = [arm.name, *(old for old, new in ARM_ALIASES.items() if new == arm.name)]
    return next((arms / name for name in names if (arms / name).is_dir()), arms / arm.name)


@dataclass(frozen=True, slots=True)
class AblateConfig:
    """Everything an ablation depends on; written to ``<out>/config.json``. Seeds are 0 .. seeds - 1."""

    out: Path = Path("runs/ablate")
    seeds: int = 1
    arms: tuple[str, ...] = DEFAULT_ARMS
    rl: RLSettings = field(default_factory=lambda: RLSettings(**EMBEDDED_RL))
    #: The base progressive reward the reward arms switch parts of off.
    progressive: ProgressiveConfig = field(default_factory=ProgressiveConfig)
    sft_steps: int = SFT_STEPS
    sft_target: float | None = SFT_TARGET
    rl_prompts: int = 4000
    heldout_size: int = 150
    heldout_rl_size: int = 300
    threads: int = 1
    #: A real model's run (``train --recipe``'s configuration, :func:`progress_sql.training.pretrained.recipe_config`)
    #: that every seed repeats up to RL: then ``rl``, ``sft_steps``, ``rl_prompts``, the held-out sizes and
    #: ``threads`` above are unused (the run's own apply), and ``real_task`` / ``data_dir`` are its data.
    real: TrainConfig | None = None
    real_task: str = ""
    data_dir: Path | None = None
    #: The feedback kind of the multi-turn held-out measurement (EX within T), the same for every arm:
    #: None, the base run's (the profile's ODT tags); ``execution``, oracle-free (no gold in the prompts).
    measure_feedback: str | None = None

    def __post_init__(self) -> None:
        if self.real is not None and self.real.warm_start is None:
            raise ConfigError("ablate on a real model needs a recipe (a warm start and a held-out set)")
        if self.seeds < 1:
            raise ConfigError(f"ablate needs seeds >= 1, got {self.seeds}")
        if not self.arms:
            raise ConfigError("ablate needs at least one arm")
        # a former name (ARM_ALIASES) stands for its arm: the table, folders and records use the current one
        object.__setattr__(self, "arms", tuple(get_arm(name).name for name in self.arms))
        duplicated = sorted({a for a in self.arms if self.arms.count(a) > 1})
        if duplicated:
            raise ConfigError(f"arm named twice: {', '.join(duplicated)}")
        for name in self.arms:
            get_arm(name).settings(self.base_rl, self.progressive)  # fails at once: unknown arm, constant reward
        if self.sft_steps < 1 or self.threads < 1:
            raise ConfigError("ablate needs sft_steps >= 1 and threads >= 1")
        if self.measure_feedback is not None:
            replace(self.base_rl, env={**self.base_rl.env, "feedback": self.measure_feedback}).env_config()

    @classmethod
    def quick(cls, out: Path, **overrides: Any) -> AblateConfig:
        """The reduced version the tests run: a tiny warm start, a few RL steps, small held-out sets."""
        # 250 warm-start steps: the smallest budget measured to give first- and second-turn successes in RL
        rl = RLSettings(
            steps=3, prompts_per_step=4, generations=4, max_new_tokens=16, save_steps=1, learning_rate=2e-4,
            temperature=0.5,
        )  # fmt: skip
        settings: dict[str, Any] = {"rl": rl, "sft_steps": 250, "sft_target": None, "rl_prompts": 16, "heldout_size": 8,
                                    "heldout_rl_size": 8}  # fmt: skip
        return cls(out=out, **(settings | overrides))

    @property
    def base_rl(self) -> RLSettings:
        """The RL settings every arm changes: the real run's, else ``rl``."""
        return self.rl if self.real is None else self.real.rl

    @property
    def sets(self) -> tuple[str, ...]:
        """The held-out sets the arms are compared on, pooled in this order."""
        if self.real is None:
            return HELDOUT_SETS
        assert self.real.heldout is not None
        return (self.real.heldout.task,)

    @property
    def warm_start_steps(self) -> int:
        if self.real is None:
            return self.sft_steps
        assert self.real.warm_start is not None
        return self.real.warm_start.steps

    def train_config(self, seed: int) -> TrainConfig:
        """The run's configuration of ``seed`` (its data, warm start and RL base)."""
        if self.real is not None:
            return replace(self.real, out=self.out / f"seed-{seed}", rl=replace(self.real.rl, seed=seed), seed=seed)
        return TrainConfig(
            out=self.out / f"seed-{seed}", rl=replace(self.rl, seed=seed), sft_steps=self.sft_steps,
            sft_target=self.sft_target,
            rl_prompts=self.rl_prompts, heldout_size=self.heldout_size, heldout_rl_size=self.heldout_rl_size,
            seed=seed, threads=self.threads,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Measured:
    """A model measured on the pooled held-out sets: per-prompt single-turn greedy outcomes and EX
    within ``turns`` turns with ODT feedback (pooled in :attr:`AblateConfig.sets` order), and each set's
    :meth:`SetMeasurement.as_dict`."""

    single: tuple[bool, ...]
    within: tuple[bool, ...]
    turns: int
    sets: Mapping[str, Any]

    @classmethod
    def of(cls, measured: Mapping[str, SetMeasurement], turns: int, sets: Sequence[str] = HELDOUT_SETS) -> Measured:
        return cls(
            tuple(m for name in sets for m in measured[name].single.matches),
            tuple(m for name in sets for m in measured[name].within_turns.matches),
            turns,
            {name: measured[name].as_dict() for name in sets},
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measured:
        return cls(tuple(data["single"]), tuple(data["within"]), int(data["turns"]), dict(data["sets"]))

    @property
    def accuracy(self) -> Accuracy:
        return Accuracy.of(self.single)

    @property
    def within_accuracy(self) -> Accuracy:
        return Accuracy.of(self.within)


@dataclass(frozen=True, slots=True)
class ArmRun:
    """One arm on one seed: the RL settings it ran with, its held-out measurement and its per-step
    logs (each reward component's mean, turns per trajectory, tied-group share, and R_late by the
    first correct turn)."""

    arm: str
    seed: int
    settings: Mapping[str, Any]
    steps: int
    seconds: float
    measured: Measured
    #: ``rewards/<name>/mean`` of each step, by component name.
    components: Mapping[str, list[float]]
    turns_mean: list[float]
    zero_variance_share: list[float]
    #: ``trajectory/late_at_first_correct/<k>`` of each step that had a success at turn k, by k.
    late_at_first_correct: Mapping[str, list[float]]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArmRun:
        return cls(**(dict(data) | {"measured": Measured.from_dict(data["measured"])}))


@dataclass(frozen=True, slots=True)
class ArmRow:
    """One row of the table. EX is pooled held-out single-turn greedy EX, the mean over seeds; ``se``
    is the larger of the example-sampling SE of that mean and the between-seed SE (``None`` for one
    seed). Changes are paired per seed (same prompts) and averaged over seeds, with the same SE rule."""

    arm: str
    label: str
    seeds: int
    n: int
    ex: float
    se: float
    se_examples: float
    se_seeds: float | None
    within_turns_ex: float
    change_vs_warm: float
    se_change_vs_warm: float
    beyond_2se_vs_warm: bool
    diff_vs_progressive: float | None
    se_diff_vs_progressive: float | None
    beyond_2se_vs_progressive: bool | None
    rl_seconds: float


@dataclass(slots=True)
class AblateResult:
    config: AblateConfig
    warm: dict[int, Measured] = field(default_factory=dict)
    #: A real model's measurement before the warm start, per seed (the same for every seed: greedy).
    base: dict[int, Measured] = field(default_factory=dict)
    sft: dict[int, dict[str, Any]] = field(default_factory=dict)
    runs: list[ArmRun] = field(default_factory=list)
    #: ``"<arm>@seed<s>"`` of the arms read back from a finished folder instead of run.
    resumed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def rows(self) -> list[ArmRow]:
        return table(self.runs, self.warm, self.config.arms)


def _mean_se(values: Sequence[float], example_ses: Sequence[float]) -> tuple[float, float, float, float | None]:
    """(mean over seeds, SE, example SE, between-seed SE or None)."""
    count = len(values)
    se_examples = math.sqrt(sum(s * s for s in example_ses)) / count
    se_seeds = statistics.stdev(values) / math.sqrt(count) if count > 1 else None
    return statistics.fmean(values), max(se_examples, se_seeds or 0.0), se_examples, se_seeds


def table(runs: Sequence[ArmRun], warm: Mapping[int, Measured], arms: Sequence[str]) -> list[ArmRow]:
    """The rows of the ablation table, in ``arms`` order (arms without a finished run are left out); a run
    or an arm under a former name (:data:`ARM_ALIASES`) is its arm's."""
    by_arm: dict[str, dict[int, ArmRun]] = {}
    for run in runs:
        by_arm.setdefault(get_arm(run.arm).name, {})[run.seed] = run
    reference = by_arm.get("progressive", {})
    rows = []
    for name in dict.fromkeys(get_arm(arm).name for arm in arms):
        seeds = sorted(by_arm.get(name, {}))
        if not seeds:
            continue
        arm_runs = [by_arm[name][s] for s in seeds]
        accuracies = [r.measured.accuracy for r in arm_runs]
        ex, se, se_examples, se_seeds = _mean_se([a.ex for a in accuracies], [a.standard_error for a in accuracies])
        changes = [PairedChange.of(warm[s].accuracy, a) for s, a in zip(seeds, accuracies, strict=True)]
        change, se_change, _, _ = _mean_se([c.difference for c in changes], [c.se_difference for c in changes])
        paired = [s for s in seeds if s in reference]
        diff = se_diff = None
        if paired and name != "progressive":
            versus = [
                PairedChange.of(reference[s].measured.accuracy, by_arm[name][s].measured.accuracy) for s in paired
            ]
            diff, se_diff, _, _ = _mean_se([c.difference for c in versus], [c.se_difference for c in versus])
        rows.append(
            ArmRow(
                arm=name, label=get_arm(name).label, seeds=len(seeds), n=sum(a.n for a in accuracies),
                ex=ex, se=se, se_examples=se_examples, se_seeds=se_seeds,
                within_turns_ex=statistics.fmean(r.measured.within_accuracy.ex for r in arm_runs),
                change_vs_warm=change, se_change_vs_warm=se_change, beyond_2se_vs_warm=abs(change) > 2 * se_change,
                diff_vs_progressive=diff, se_diff_vs_progressive=se_diff,
                beyond_2se_vs_progressive=None if diff is None or se_diff is None else abs(diff) > 2 * se_diff,
                rl_seconds=statistics.fmean(r.seconds for r in arm_runs),
            )
        )  # fmt: skip
    return rows


def _series(metrics: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [float(m[key]) for m in metrics if key in m]


def _step_logs(path: Path) -> list[dict[str, Any]]:
    """The arm's ``metrics.jsonl``, one row per step (an arm resumed mid-RL logged its first steps in
    the interrupted run: the file has them all; a step logged twice keeps its last row)."""
    rows = read_json_lines(path, "arm step log", objects=True)
    return sorted({int(row["step"]): row for row in rows}.values(), key=lambda row: int(row["step"]))


def _arm_run(arm: Arm, seed: int, settings: RLSettings, rl: Any, measured: Measured, folder: Path) -> ArmRun:
    from progress_sql.integrations.trl import component_names, trainer_preset

    metrics = _step_logs(folder / "rl" / "metrics.jsonl")
    late_keys = sorted({k for m in metrics for k in m if k.startswith("trajectory/late_at_first_correct/")})
    env = settings.env_config()
    progressive = env.progressive
    components = list(component_names(settings.reward, task_terms=False))  # the arm's own reward
    # run_rl sets the group size and temperature itself: the preset's own values would mislead here
    trainer = {
        k: v
        for k, v in trainer_preset(
            settings.preset, kl_coef=settings.kl_coef, updates_per_batch=settings.updates_per_batch
        ).settings.items()
        if k not in ("num_generations", "temperature")
    }
    recorded: dict[str, Any] = {
        "reward": settings.reward, "turns": settings.turns, "algorithm": settings.preset, "feedback": env.feedback,
        "trainer": trainer, "steps": settings.steps,
        "prompts_per_step": settings.prompts_per_step, "generations": settings.generations,
        "learning_rate": settings.learning_rate, "temperature": settings.temperature, "seed": settings.seed,
        "progressive": {"gamma": progressive.gamma, "disabled": sorted(progressive.disabled),
                        "formula": progressive.formula},
        "components": components,
    }  # fmt: skip
    return ArmRun(
        arm=arm.name, seed=seed, settings=recorded, steps=rl.steps, seconds=round(rl.seconds, 1), measured=measured,
        components={name: _series(metrics, f"rewards/{name}/mean") for name in components},
        turns_mean=_series(metrics, "trajectory/turns_mean"),
        zero_variance_share=_series(metrics, "groups/zero_variance_share"),
        late_at_first_correct={k.rsplit("/", 1)[1]: _series(metrics, k) for k in late_keys},
    )  # fmt: skip


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plain(data)) + "\n", encoding="utf-8")


def _measured_feedback_words(kind: str | None) -> str:
    """How the report names the multi-turn measurement's feedback.

    >>> _measured_feedback_words(None), _measured_feedback_words("execution")
    ("the run's ODT feedback", '`execution` feedback (the same kind for every arm)')
    """
    return "the run's ODT feedback" if kind is None else f"`{kind}` feedback (the same kind for every arm)"


def _measured_rl(rl: RLSettings, feedback: str | None) -> RLSettings:
    """The settings whose environment the held-out measurement runs in: ``rl``'s, with ``feedback``."""
    return rl if feedback is None else replace(rl, env={**rl.env, "feedback": feedback})


class _EmbeddedSeed:
    """One seed of the embedded default: its data, its warm start (made or read back) and its RL prompts."""

    def __init__(self, config: AblateConfig, seed: int, phase: Phase) -> None:
        from progress_sql.training.recipe import embedded_data, rl_prompts, warm_start

        self.base = config.train_config(seed)
        self.rl = _measured_rl(config.rl, config.measure_feedback)
        self.turns = config.rl.turns
        self.fmt = CompactFormat()
        embedded = embedded_data(self.base)
        self.sets = {name: embedded.held_out[name] for name in HELDOUT_SETS}
        self.model, self.tokenizer, self.sft = warm_start(self.base, embedded.data, phase, embedded.pool.validation)
        self.prompts = rl_prompts(self.fmt, embedded.pool.prompts, config.rl_prompts)
        self.before_warm_start: Measured | None = None

    def measure(self, model: Any, label: str, phase: Phase) -> Measured:
        from progress_sql.training.recipe import measure_sets

        advance = phase(label, 1)
        measured = Measured.of(measure_sets(model, self.tokenizer, self.fmt, self.sets, self.rl), self.turns)
        advance(1)
        return measured

    def policy(self) -> Any:
        from progress_sql.training.recipe import load_checkpoint, sft_checkpoint

        return load_checkpoint(sft_checkpoint(self.base.out))[0]

    def run_rl(self, policy: Any, settings: RLSettings, folder: Path, label: str, phase: Phase) -> Any:
        from progress_sql.execution.pool import ExecutionPool
        from progress_sql.training.recipe import advancer
        from progress_sql.training.rl import run_rl

        advance = phase(label, settings.steps)
        with ExecutionPool(workers=1) as execution:
            return run_rl(
                policy, self.tokenizer, self.fmt, self.prompts, settings, folder / "rl", execution,
                on_step=advancer(advance),
            )  # fmt: skip


class _RealSeed:
    """One seed of a real model's recipe (:mod:`progress_sql.training.pretrained`): data, leakage guard,
    held-out set, the base model measured and warm-started (or read back), the RL prompts."""

    def __init__(self, config: AblateConfig, seed: int, phase: Phase) -> None:
        from progress_sql.training.pretrained import prepare_real, warm_started

        self.base = config.train_config(seed)
        self.setup = prepare_real(self.base, config.real_task, config.data_dir, phase)
        self.model = warm_started(self.setup)
        self.sets = config.sets
        self.turns = self.setup.config.heldout.turns
        self.feedback = config.measure_feedback
        self.tokenizer = self.setup.tokenizer
        self.sft = self.setup.result.sft
        self.prompts = self.setup.rl_prompts()
        base = self.setup.result.base_detail
        self.before_warm_start = Measured.of(base, next(iter(base.values())).turns, self.sets)

    def measure(self, model: Any, label: str, phase: Phase) -> Measured:
        return Measured.of(self.setup.measure(model, label, feedback=self.feedback), self.turns, self.sets)

    def policy(self) -> Any:
        warm = self.setup.config.warm_start.steps > 0
        return self.setup.load_policy(self.setup.sft_dir if warm else None)

    def run_rl(self, policy: Any, settings: RLSettings, folder: Path, label: str, phase: Phase) -> Any:
        del label, phase  # the setup's own phase names the bar
        return self.setup.run_rl(policy, settings, folder / "rl", self.prompts)


def run_ablate(config: AblateConfig, phase: Phase) -> AblateResult:
    """Every arm of ``config`` on every seed from the seed's shared warm start (see the module docstring)."""
    from progress_sql.training.recipe import configure_threads, write_config

    configure_threads(config.threads if config.real is None else config.real.threads)
    started = time.perf_counter()
    write_config(config, config.out)
    result = AblateResult(config)
    arms_done = phase("ablation arms (seeds x arms)", config.seeds * len(config.arms))
    for seed in range(config.seeds):
        source = _EmbeddedSeed(config, seed, phase) if config.real is None else _RealSeed(config, seed, phase)
        result.sft[seed] = source.sft
        if source.before_warm_start is not None:
            result.base[seed] = source.before_warm_start
        warm_file = source.base.out / "warm.json"
        if warm_file.is_file():
            result.warm[seed] = Measured.from_dict(read_json(warm_file, "warm start record"))
        else:
            result.warm[seed] = source.measure(source.model, f"seed {seed}: EX of the warm start", phase)
            _write_json(warm_file, result.warm[seed])
        del source.model
        for name in config.arms:
            arm = get_arm(name)
            folder = arm_folder(source.base.out / "arms", arm)
            if (folder / DONE_MARKER).is_file():
                finished = ArmRun.from_dict(read_json(folder / "result.json", "arm result"))
                result.runs.append(replace(finished, arm=arm.name))  # one written under a former name too
                result.resumed.append(f"{name}@seed{seed}")
                arms_done(1)
                continue
            settings = arm.settings(source.base.rl, config.progressive)
            policy = source.policy()
            rl = source.run_rl(policy, settings, folder, f"seed {seed}, arm {name} (RL steps)", phase)
            measured = source.measure(policy, f"seed {seed}, arm {name}: EX after RL", phase)
            policy.save_pretrained(folder / "final")
            source.tokenizer.save_pretrained(folder / "final")
            run = _arm_run(arm, seed, settings, rl, measured, folder)
            _write_json(folder / "result.json", run)
            # the trainer's checkpoints (and a real run's copy of the policy) only serve an interrupted arm
            shutil.rmtree(folder / "rl" / "checkpoints", ignore_errors=True)
            shutil.rmtree(folder / "rl" / "final", ignore_errors=True)
            (folder / DONE_MARKER).write_text(f"{time.time()}\n", encoding="utf-8")
            result.runs.append(run)
            arms_done(1)
    result.seconds = time.perf_counter() - started
    return result


def summary(result: AblateResult) -> dict[str, Any]:
    """The results part of ``summary.json`` (keys in docs/training.md)."""
    return {
        "model": "tiny (embedded default)" if result.config.real is None else result.config.real.model,
        "heldout_sets": list(result.config.sets),
        "turns": result.config.base_rl.turns,
        "steps": result.config.base_rl.steps,
        "seeds": result.config.seeds,
        "arms": [plain(row, digits=6) for row in result.rows()],
        "warm_start": {
            str(seed): {
                "n": m.accuracy.n,
                "ex": round(m.accuracy.ex, 6),
                "se": round(m.accuracy.standard_error, 6),
                "within_turns_ex": round(m.within_accuracy.ex, 6),
                "sft": result.sft.get(seed, {}),
                **({"before_warm_start": _paired(result.base[seed], m)} if seed in result.base else {}),
            }
            for seed, m in sorted(result.warm.items())
        },
        "resumed": result.resumed,
        "seconds": round(result.seconds, 1),
    }


def _paired(before: Measured, after: Measured) -> dict[str, Any]:
    """EX before the warm start and the paired change the warm start made."""
    return {"ex": round(before.accuracy.ex, 6), "se": round(before.accuracy.standard_error, 6),
            "within_turns_ex": round(before.within_accuracy.ex, 6),
            "warm_start_change": PairedChange.of(before.accuracy, after.accuracy).as_dict()}  # fmt: skip


def records(result: AblateResult) -> list[dict[str, Any]]:
    """samples.jsonl: one record per arm and seed (its settings, EX, per-step logs; no per-prompt lists)."""
    rows = []
    for run in result.runs:
        data = plain(run, digits=6)
        measured = data.pop("measured")
        warm = result.warm[run.seed].accuracy
        change = PairedChange.of(warm, run.measured.accuracy)
        rows.append(
            data | {
                "ex": round(run.measured.accuracy.ex, 6), "n": run.measured.accuracy.n,
                "within_turns_ex": round(run.measured.within_accuracy.ex, 6), "turns_measured": measured["turns"],
                "change_vs_warm": change.as_dict(), "sets": measured["sets"],
            }
        )  # fmt: skip
    return rows


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def report(result: AblateResult, summary_data: Mapping[str, Any], out: Path) -> str:
    """report.md (and ``ablation.png`` when matplotlib is there)."""
    from progress_sql.plots import PlottingUnavailableError, labelled_bars

    rows = result.rows()
    plot = ""
    try:
        baseline = None
        if result.warm:
            warm = [m.accuracy for m in result.warm.values()]
            baseline = ("warm start", statistics.fmean(a.ex for a in warm))
        n = rows[0].n if rows else 0
        labelled_bars(
            [(row.arm, row.ex, row.se) for row in rows], out / "ablation.png",
            f"held-out EX by arm (greedy, single turn; {held_out_words(result.config)}, n = {n})", baseline=baseline,
        )  # fmt: skip
        plot = "![ablation](ablation.png)"
    except PlottingUnavailableError as error:
        plot = f"(no plot: {error})"
    config = result.config
    rl = config.base_rl
    model = (
        "the embedded default (tiny, template questions)" if config.real is None
        else f"`{config.real.model}` (prompt style `{config.real.prompt}`, training task `{config.real_task}`)"
    )  # fmt: skip
    lines = [
        "# progress-sql ablate: the paper's ablations (Table 3; GSPO: Table 13)",
        "",
        f"Model: {model}. {config.seeds} seed(s); per seed one supervised warm start ({config.warm_start_steps} "
        f"steps), then every arm: {rl.steps} RL steps of {rl.prompts_per_step} prompts x {rl.generations} samples, "
        f"lr {rl.learning_rate:g}, temperature {rl.temperature:g}, the same RL prompts; "
        f"{result.seconds:.0f} s in all.",
        "",
        f"EX: greedy single-turn execution accuracy on the {held_out_words(config)} ({', '.join(config.sets)}; "
        "the same prompts for every arm of a seed). +- is one standard error (over seeds and examples: the larger "
        "of the two). Changes are paired per prompt and averaged over seeds. EX within T: greedy, with "
        f"{_measured_feedback_words(config.measure_feedback)}, T = {rl.turns} for every arm.",
        "",
        "| arm | what changes | EX (%) | EX within T (%) | vs warm start (points) | vs progressive (points) "
        "| > 2 SE vs progressive |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        versus = (
            "-" if row.diff_vs_progressive is None
            else f"{100 * row.diff_vs_progressive:+.1f} +- {_pct(row.se_diff_vs_progressive)}"
        )  # fmt: skip
        beyond = "-" if row.beyond_2se_vs_progressive is None else ("yes" if row.beyond_2se_vs_progressive else "no")
        lines.append(
            f"| {row.arm} | {row.label} | {_pct(row.ex)} +- {_pct(row.se)} | {_pct(row.within_turns_ex)} | "
            f"{100 * row.change_vs_warm:+.1f} +- {_pct(row.se_change_vs_warm)} | {versus} | {beyond} |"
        )
    warm_lines = [
        f"- seed {seed}: warm start EX {_pct(w['ex'])}% +- {_pct(w['se'])} (n = {w['n']}), within T "
        f"{_pct(w['within_turns_ex'])}%" + _before_words(w.get("before_warm_start"))
        for seed, w in summary_data["warm_start"].items()
    ]
    lines += [
        "",
        *warm_lines,
        *([f"- read back from a finished arm folder: {', '.join(result.resumed)}"] if result.resumed else []),
        "",
        plot,
        "",
        "Per-step reward components of every arm and seed are in samples.jsonl (`components`) and in",
        "`seed-<s>/arms/<arm>/rl/metrics.jsonl`.",
        "",
    ]
    return "\n".join(lines)


def held_out_words(config: AblateConfig) -> str:
    return "pooled held-out template sets" if config.real is None else "held-out real questions of other databases"


def _before_words(before: Mapping[str, Any] | None) -> str:
    if before is None:
        return ""
    change = before["warm_start_change"]
    return (
        f"; before the warm start {_pct(before['ex'])}% +- {_pct(before['se'])} (the warm start: "
        f"{100 * change['diff']:+.1f} +- {_pct(change['se_diff'])} points, paired)"
    )


def arm_names(text: str) -> tuple[str, ...]:
    """``--arms a,b,...`` as arm names, each checked against :data:`ARMS` (a former name gives its arm's)."""
    return tuple(get_arm(part.strip()).name for part in text.split(",") if part.strip())


__all__ = [
    "ARMS",
    "ARM_ALIASES",
    "DEFAULT_ARMS",
    "AblateConfig",
    "AblateRequest",
    "AblateResult",
    "AblateRun",
    "Arm",
    "ArmRow",
    "ArmRun",
    "Measured",
    "ablate_config",
    "arm_folder",
    "arm_names",
    "get_arm",
    "records",
    "report",
    "run_ablate",
    "run_ablation",
    "summary",
    "table",
]


# ---- the whole run, as ``ablate`` asks for it -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class AblateRequest:
    """One ``ablate`` run as its options give it; None: the run's own default (the embedded default's,
    or with ``recipe`` / ``model`` a real model's recipe)."""

    out: Path = Path("runs/ablate")
    seeds: int = 1
    arms: str | None = None  # comma-separated arm names; None: DEFAULT_ARMS
    steps: int | None = None
    lr: float | None = None
    per_device_batch: int | None = None
    quick: bool = False
    threads: int | None = None
    recipe: str | None = None
    model: str | None = None
    data_dir: Path | None = None
    sft_steps: int | None = None
    heldout_size: int | None = None
    #: The profile of every arm's environment and of the base reward (``progress_sql.profiles``).
    profile: str = DEFAULT_PROFILE
    #: The feedback kind of the multi-turn held-out measurement (AblateConfig.measure_feedback).
    measure_feedback: str | None = None


@dataclass(frozen=True, slots=True)
class AblateRun:
    """A finished ablation: its configuration, result and ``summary.json``."""

    config: AblateConfig
    result: AblateResult
    summary: RunSummary


def ablate_config(request: AblateRequest) -> AblateConfig:
    """The ablation's configuration (ConfigError for options that do not fit the run)."""
    chosen = arm_names(request.arms) if request.arms else DEFAULT_ARMS
    profile = get_profile(request.profile)
    rl_given: dict[str, Any] = {"steps": request.steps, "learning_rate": request.lr,
                                "per_device_batch": request.per_device_batch, "profile": profile.name,
                                "reward": profile.reward.value}  # fmt: skip
    if request.recipe is None and request.model is None:
        if request.data_dir is not None or request.sft_steps is not None or request.heldout_size is not None:
            raise ConfigError(
                "--data-dir, --sft-steps and --heldout-size are a recipe's: use them with --recipe or --model"
            )
        build = AblateConfig.quick if request.quick else AblateConfig
        config = build(request.out, seeds=request.seeds, arms=chosen, threads=request.threads or 1,
                       measure_feedback=request.measure_feedback)  # fmt: skip
        return replace(config, rl=replace(config.rl, **{k: v for k, v in rl_given.items() if v is not None}))
    from progress_sql.training.pretrained import recipe, recipe_config, recipe_for_model

    if request.quick:
        raise ConfigError("--quick is the embedded default's reduced run: use --steps, --sft-steps and --heldout-size")
    real_recipe = recipe(request.recipe) if request.recipe is not None else recipe_for_model(request.model or "")
    if request.data_dir is None:
        raise ConfigError(f"the recipe {real_recipe.name} needs --data-dir (its task {real_recipe.task}'s folder)")
    real = recipe_config(
        real_recipe, out=request.out, data_dir=request.data_dir, model=request.model, rl=rl_given,
        warm_start_steps=request.sft_steps, heldout_size=request.heldout_size, threads=request.threads,
    )  # fmt: skip
    return AblateConfig(out=request.out, seeds=request.seeds, arms=chosen, real=real, real_task=real_recipe.task,
                        data_dir=request.data_dir, measure_feedback=request.measure_feedback)  # fmt: skip


def run_ablation(request: AblateRequest, phase: Phase) -> AblateRun:
    """Run ``ablate`` (:func:`run_ablate`) and write its run folder once: ``summary.json`` with the
    settings, ``samples.jsonl`` (one record per arm and seed), ``report.md`` and the plot."""
    config = ablate_config(request)
    prepared_folder(request.out)  # before the work starts: a bad path fails at once
    result = run_ablate(config, phase)
    rl = config.base_rl
    settings = {
        "profile": get_profile(rl.profile).settings(),
        "seeds": request.seeds, "arms": list(config.arms), "steps": rl.steps, "quick": request.quick,
        "threads": config.threads if config.real is None else config.real.threads,
        "recipe": request.recipe, "model": None if config.real is None else config.real.model,
        "sft_steps": config.warm_start_steps, "prompts_per_step": rl.prompts_per_step,
        "generations": rl.generations, "lr": rl.learning_rate, "temperature": rl.temperature, "turns": rl.turns,
        "per_device_batch": rl.per_device_batch,
    }  # fmt: skip
    run = RunSummary("ablate", settings, summary(result))
    with writing_results(request.out):
        RunFolder(request.out).write(run, records(result), report(result, run.to_dict(), request.out))
    return AblateRun(config, result, run)
