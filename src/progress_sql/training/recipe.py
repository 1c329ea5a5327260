"""``progress-sql train``: the whole Progress-SQL loop in one command.

The embedded default (``model="tiny"`` or ``"small"``) runs on a laptop CPU: template data over the
embedded Spider databases, a tokenizer trained here, a Qwen2-architecture model built from a config,
a supervised warm start where half of the examples show a feedback turn, held-out execution accuracy
(EX), multi-turn GRPO with the progressive reward on prompts the model does not solve yet, EX again,
and a guard that restores the supervised weights when RL lowers EX by more than two standard errors.
Any other ``model`` is a local folder or hub name trained on ``task`` with the paper's prompts.

Every phase writes into ``out``; a rerun with the same ``out`` resumes (the supervised checkpoint is
reused, RL resumes from its last checkpoint).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from progress_sql.data.ddl import db_details
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.evaluation.stats import Accuracy, PairedChange, pooled
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trainer_setting import PAPER
from progress_sql.progress import Phase
from progress_sql.prompts import (
    PAPER_STYLE,
    ChatTemplateFormat,
    CompactFormat,
    ConversationFormat,
    Message,
    PromptStyle,
    opening_messages,
    prompt_style,
)
from progress_sql.rewards.registry import get_reward
from progress_sql.training.heldout import SetMeasurement, measure
from progress_sql.training.real_settings import HeldOut, WarmStartSettings
from progress_sql.training.rl import RLResult, RLSettings, run_rl, world_rank, world_size
from progress_sql.training.selection import RL_SELECT_RULES, BestOnValidation, RLSelect
from progress_sql.training.templates import TemplateDataset
from progress_sql.types import Example

EMBEDDED_SIZES = ("tiny", "small")

#: The embedded default's RL settings (measured in docs/benchmarks.md, Training): RL gets most of the
#: budget (300 steps of 8 prompts x 8 samples), lr 2e-4, and samples at temperature 0.5. At 1.0 the
#: tiny model's samples are far worse than its greedy answers (first-turn EX 0.19 sampled vs 0.40
#: greedy), and RL spent its signal removing sampling errors greedy decoding never makes: training
#: reward up, greedy EX flat. Up to 56% of groups are tied (no signal): 8 prompts a step, not 4.
EMBEDDED_RL: dict[str, Any] = {"steps": 300, "prompts_per_step": 8, "learning_rate": 2e-4, "temperature": 0.5}

#: A real model's RL settings: the trainer setting the TRL, verl and SkyRL recipes share
#: (integrations/trainer_setting.py ``PAPER``; docs/training.md says which values are the paper's and
#: which ours), in TRL's terms: a step is one optimizer update on ``prompts_per_step`` prompts, a quarter
#: of a rollout batch of 64 (G = 8 samples each at temperature 1.0, T = 4, KL 0.001, lr 1e-6; 4,096
#: completion tokens, 1,024 per turn). Ours besides: passes of 4 sequences per GPU, 400 updates (100
#: rollout batches, about one pass over Spider's 7,000 training questions), a 10 s SQL timeout, a
#: checkpoint every 200 updates (50 rollout batches), the last 2 kept.
REAL_MODEL_RL: dict[str, Any] = {
    "turns": PAPER.turns.value,
    "generations": PAPER.samples_per_prompt.value,
    "temperature": PAPER.temperature.value,
    "learning_rate": PAPER.learning_rate.value,
    "kl_coef": PAPER.kl_coef.value,
    "updates_per_batch": PAPER.updates_per_batch.value,
    "max_new_tokens": PAPER.turn_tokens.value,
    "max_completion_tokens": PAPER.response_tokens,
    "prompts_per_step": PAPER.mini_batch_prompts,
    "per_device_batch": 4,
    "steps": 100 * PAPER.updates_per_batch.value,
    "timeout_s": 10.0,
    "save_steps": 50 * PAPER.updates_per_batch.value,
    "save_total_limit": 2,
}


#: A real model's RL settings with LoRA adapters (``lora`` set), over :data:`REAL_MODEL_RL`. lr 1e-5, ten
#: times the full fine-tune's 1e-6: the GRPO table of TRL's "LoRA Without Regret" guide (the TRL
#: repository's docs/source/lora_without_regret.md, not in the wheel: ``--learning_rate`` 1.0e-5 with LoRA,
#: 1.0e-6 full, after Schulman et al. 2025, whose LoRA optimum is about ten times full fine-tuning's); the pinned
#: trl==1.16.0 itself keeps the same ratio in its LoRA examples (trl/scripts/sft.py:30 and :47,
#: trl/scripts/distillation.py:31 and :42: 2.0e-5 full, 2.0e-4 LoRA). An explicit lr still wins.
REAL_MODEL_LORA_RL: dict[str, Any] = {"learning_rate": 1e-5}


def default_rl_settings(model: str, **overrides: Any) -> RLSettings:
    """RL settings for ``model``: :data:`EMBEDDED_RL` over :class:`RLSettings`'s defaults for the
    embedded sizes, :data:`REAL_MODEL_RL` otherwise (with :data:`REAL_MODEL_LORA_RL` over it when
    ``lora`` is given); ``overrides`` that are not None win."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if model in EMBEDDED_SIZES:
        return RLSettings(**(EMBEDDED_RL | given))
    return RLSettings(**(REAL_MODEL_RL | (REAL_MODEL_LORA_RL if given.get("lora") else {}) | given))


#: The embedded default's warm start: at most 1,200 steps, ending once validation EX reaches 0.35 (see
#: :attr:`TrainConfig.sft_target`).
SFT_STEPS = 1200
SFT_TARGET = 0.35
#: The embedded default keeps the RL step with the best validation EX, checked every 50 steps (see
#: :attr:`TrainConfig.rl_select`).
RL_SELECT: RLSelect = "validation"
RL_CHECK_EVERY = 50


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Everything a run depends on; written to ``<out>/config.json``."""

    out: Path = Path("runs/train")
    model: str = "tiny"
    rl: RLSettings = field(default_factory=lambda: RLSettings(**EMBEDDED_RL))
    compare_reward: str | None = None
    #: Most optimizer steps of the supervised warm start: a step budget, so that a seed reproduces the
    #: run on any machine (a time budget made the warm start depend on the machine's speed).
    sft_steps: int = SFT_STEPS
    #: The warm start ends (after a cool-down of ``sft_cooldown_steps``) once greedy EX on the RL pool's
    #: validation set reaches this share, checked every ``sft_check_every`` steps from
    #: ``sft_check_from``; None: the whole ``sft_steps`` budget with the fixed schedule. Why a target and
    #: not a fixed budget: docs/architecture.md#the-supervised-warm-start-trainingsftpy.
    sft_target: float | None = SFT_TARGET
    sft_check_from: int = 450
    sft_check_every: int = 50
    sft_cooldown_steps: int = 150
    sft_validation_size: int = 150
    #: Which RL step's weights the run keeps and scores (``training/selection.py``): ``validation``, the
    #: step with the highest greedy EX on the same validation set, checked every ``rl_check_every``
    #: steps from step 0 (the warm start); ``last``, the last step's. The embedded default only: a
    #: ``--task`` run has no validation set and keeps the last step.
    rl_select: RLSelect = RL_SELECT
    rl_check_every: int = RL_CHECK_EVERY
    #: Most distinct prompts RL may draw from (the embedded default's pool is the template pairs no
    #: supervised example and no held-out set uses); None: every training example (a real model's default).
    rl_prompts: int | None = 4000
    heldout_size: int = 150
    #: Size of the held-out set drawn from the RL prompts' own pool (same kind, disjoint by SQL).
    heldout_rl_size: int = 300
    seed: int = 0
    threads: int = 1
    #: Wall-clock seconds the run is expected to take; exceeding it only adds a warning to the report.
    expected_seconds: float = 780.0
    #: Gold-audit filter set applied to a --task dataset's training examples (the embedded default's
    #: template golds are generated, so it does not apply there); see progress_sql.audit.filters.
    data_filter: str = "rl-default"
    #: Train on databases or schemas of registered evaluation tasks anyway (the leakage guard,
    #: progress_sql.data.leakage, refuses them otherwise); a --task run only.
    allow_eval_overlap: bool = False
    #: Further folders where the leakage guard looks for evaluation tasks' files.
    eval_data_dirs: tuple[str, ...] = ()
    #: A real model's prompt style (``progress_sql.prompts.PROMPT_STYLES``).
    prompt: str = "paper"
    #: Another questions file of ``--task`` (relative to ``--data-dir``); None: the task's own.
    questions: str | None = None
    #: A real model's supervised warm start and held-out evaluation task (``training/pretrained.py``,
    #: ``train --recipe``); None: RL straight from the model, every tenth task example held out.
    warm_start: WarmStartSettings | None = None
    heldout: HeldOut | None = None
    #: A real model trains only its top N decoder layers (``training.pretrained.train_top_layers``).
    trainable_layers: int | None = None

    def __post_init__(self) -> None:
        from progress_sql.audit.filters import FILTER_SETS
        from progress_sql.registry import lookup

        lookup(FILTER_SETS, self.data_filter, "filter set")
        if self.compare_reward is not None:
            get_reward(self.compare_reward)
        if self.threads < 1:
            raise ConfigError(f"threads must be >= 1, got {self.threads}")
        if self.rl.lora is not None and self.embedded:
            raise ConfigError("LoRA is for a real model (--model): the embedded default trains every weight")
        if self.sft_steps < 1:
            raise ConfigError(f"sft_steps must be >= 1, got {self.sft_steps}")
        if self.sft_target is not None and not 0 < self.sft_target <= 1:
            raise ConfigError(f"sft_target must be in (0, 1], got {self.sft_target}")
        if min(self.sft_check_from, self.sft_check_every, self.sft_cooldown_steps, self.sft_validation_size) < 1:
            raise ConfigError(
                "sft_check_from, sft_check_every, sft_cooldown_steps and sft_validation_size must be >= 1"
            )
        if self.rl_select not in RL_SELECT_RULES:
            raise ConfigError(f"rl_select must be one of {', '.join(RL_SELECT_RULES)}, got {self.rl_select!r}")
        if self.rl_check_every < 1:
            raise ConfigError(f"rl_check_every must be >= 1, got {self.rl_check_every}")
        if self.rl_prompts is not None and self.rl_prompts < 1:
            raise ConfigError(f"rl_prompts must be >= 1, got {self.rl_prompts}")
        from progress_sql.prompts import prompt_style

        prompt_style(self.prompt)
        if self.embedded and (self.warm_start is not None or self.heldout is not None or self.prompt != "paper"):
            raise ConfigError("a warm start recipe and a prompt style are for a real model (--model)")
        if (self.warm_start is None) != (self.heldout is None):
            raise ConfigError("a real model's warm start and its held-out task come together (train --recipe)")

    @property
    def embedded(self) -> bool:
        return self.model in EMBEDDED_SIZES


@dataclass(slots=True)
class RunResult:
    """What the report shows."""

    config: TrainConfig
    data_sizes: dict[str, int] = field(default_factory=dict)
    sft: dict[str, Any] = field(default_factory=dict)
    #: Greedy single-turn EX per held-out set (per-prompt outcomes kept for the paired change).
    before: dict[str, Accuracy] = field(default_factory=dict)
    after: dict[str, Accuracy] = field(default_factory=dict)
    #: The embedded default's fuller measurement (multi-turn EX, first-correct turn, Table 8 rates).
    before_detail: dict[str, SetMeasurement] = field(default_factory=dict)
    after_detail: dict[str, SetMeasurement] = field(default_factory=dict)
    #: How the RL prompts were chosen (sizes, pass rates), for the report.
    rl_data: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    rl: dict[str, RLResult] = field(default_factory=dict)
    compare_after: dict[str, Accuracy] = field(default_factory=dict)
    #: Per reward: how its kept weights were chosen (:meth:`BestOnValidation.as_dict`).
    rl_selection: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Greedy single-turn EX of the last RL step, when the run kept another step's weights.
    last_after: dict[str, Accuracy] = field(default_factory=dict)
    guard: str = ""
    seconds: float = 0.0
    #: A warm-started real model: greedy single-turn EX (and the fuller measurement) before the warm start.
    base: dict[str, Accuracy] = field(default_factory=dict)
    base_detail: dict[str, SetMeasurement] = field(default_factory=dict)
    #: The leakage guard's decision on a --task run's data (``LeakageDecision.to_dict``); the embedded
    #: default's says why the guard does not apply to it (:data:`EMBEDDED_LEAKAGE`).
    leakage: dict[str, Any] = field(default_factory=dict)
    #: A real model's precision (:func:`precision_record`): the checkpoint's dtype, the loaded weights',
    #: what RL computed in.
    precision: dict[str, Any] = field(default_factory=dict)


def precision_record(resolved: str, model: Any, rl: Mapping[str, RLResult]) -> dict[str, Any]:
    """The dtype ``resolved``'s checkpoint was saved in, the dtypes of ``model``'s weights as loaded
    (fp32: the optimizer's master weights), and each RL run's compute precision."""
    from progress_sql.models import checkpoint_dtype, weight_dtypes

    return {
        "checkpoint_dtype": checkpoint_dtype(resolved),
        "weight_dtypes": weight_dtypes(model),
        "rl": {reward: run.precision for reward, run in rl.items()},
    }


def configure_threads(threads: int) -> None:
    """One OpenMP thread per core in use, waiting passively (docs/training.md: busy-waiting
    threads on a shared 2-core machine made training 15-20 times slower)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import torch

    torch.set_num_threads(threads)


def template_set(before: dict[str, Accuracy]) -> Accuracy:
    """The held-out template sets pooled (the headline figure and the guard's yardstick)."""
    return pooled([acc for name, acc in before.items() if name != "real_test"])


def heldout_change(result: RunResult, after: dict[str, Accuracy] | None = None) -> PairedChange | None:
    """The paired change of pooled held-out template EX from before RL to ``after`` (default: the kept
    weights' EX; None when a side lacks per-prompt outcomes)."""
    before, after_rl = template_set(result.before), template_set(result.after if after is None else after)
    if not before.n or len(before.matches) != before.n or len(after_rl.matches) != after_rl.n:
        return None
    return PairedChange.of(before, after_rl) if before.n == after_rl.n else None


def evaluate(
    model: Any, tokenizer: Any, fmt: ConversationFormat, sets: dict[str, list[Example]]
) -> dict[str, Accuracy]:
    """Greedy single-turn EX on each held-out set (the paper's evaluation protocol): the compact
    format through batched generation, a chat-template model through its template."""
    from progress_sql.training.evaluate import ex_store, execution_accuracy, greedy_sql

    results = {}
    with ex_store() as store:
        for name, examples in sets.items():
            if isinstance(fmt, CompactFormat):
                texts = greedy_sql(model, tokenizer, fmt, examples)
            else:
                texts = _chat_greedy(model, tokenizer, examples, getattr(fmt, "style", PAPER_STYLE))
            results[name] = execution_accuracy(examples, texts, store=store)
    return results


def _chat_messages(example: Example, style: PromptStyle = PAPER_STYLE) -> list[Message]:
    return opening_messages(example, db_details(example.db_path, style.schema_profile), style=style)


def _chat_greedy(
    model: Any, tokenizer: Any, examples: Sequence[Example], style: PromptStyle = PAPER_STYLE
) -> list[str]:
    from progress_sql.backends.base import GenerationConfig
    from progress_sql.backends.hf import TransformersBackend

    backend = TransformersBackend(model, tokenizer, use_chat_template=True)
    generation = GenerationConfig(max_tokens=min(512, style.max_new_tokens))
    outputs = backend.generate([_chat_messages(e, style) for e in examples], generation)
    return [choices[0] for choices in outputs]


@dataclass(frozen=True, slots=True)
class RLPool:
    """The embedded default's RL data: ``prompts``, template pairs that neither the supervised warm
    start nor a held-out set uses (shuffled, one paraphrase per SQL), and ``heldout``, a
    family-balanced set drawn from the same pool, disjoint from ``prompts`` by SQL: held-out prompts of
    the very kind RL trains on."""

    prompts: tuple[Example, ...]
    heldout: tuple[Example, ...]
    #: Drawn like ``heldout`` and disjoint from both (by SQL): what the warm start checks its progress
    #: on (:class:`progress_sql.training.sft.EarlyStop`), so the held-out sets stay untouched until scored.
    validation: tuple[Example, ...] = ()


def rl_pool(
    data: TemplateDataset,
    databases: Mapping[str, Path],
    seed: int,
    heldout_size: int,
    *,
    paraphrases: bool = True,
    validation_size: int = 0,
) -> RLPool:
    """Split the template pairs no supervised or held-out example uses into RL prompts and a
    same-kind held-out set (see :class:`RLPool`). Deterministic for a seed.

    The held-out set takes one paraphrase per SQL; with ``paraphrases`` the RL prompts keep every
    paraphrase of the remaining SQL (about three times as many distinct prompts, so fewer revisits of
    each: RL on a few hundred prompts seen 2-5 times each learned them and lost held-out EX)."""
    import random

    from progress_sql.training.templates import generate_pairs

    def key(db_id: str, sql: str) -> tuple[str, str]:
        return db_id, " ".join(sql.split())

    used = {key(e.db_id, e.gold_sql) for e in [*data.train, *data.heldout_new_combo, *data.heldout_new_value]}
    unseen: dict[tuple[str, str], list[Example]] = {}  # SQL -> its paraphrases
    for index, pair in enumerate(generate_pairs(databases)):
        identity = key(pair.db_id, pair.sql)
        if identity not in used:
            unseen.setdefault(identity, []).append(
                Example(
                    index=index, question=pair.question, db_id=pair.db_id, db_path=str(databases[pair.db_id]),
                    gold_sql=pair.sql, difficulty=pair.family,
                )
            )  # fmt: skip
    rng = random.Random(seed)
    sqls = list(unseen)
    rng.shuffle(sqls)
    by_family: dict[str, list[Example]] = {}
    for identity in sqls:
        first = unseen[identity][0]
        by_family.setdefault(first.difficulty or "", []).append(first)

    def draw(size: int) -> list[Example]:
        drawn: list[Example] = []
        while len(drawn) < size and any(by_family.values()):
            for family in sorted(by_family):  # round-robin: every family as evenly as it can
                if by_family[family] and len(drawn) < size:
                    drawn.append(by_family[family].pop())
        return drawn

    heldout = draw(heldout_size)
    validation = draw(validation_size)  # after the held-out set: that one is the same with or without it
    chosen = {key(e.db_id, e.gold_sql) for e in [*heldout, *validation]}
    prompts = [e for i in sqls if i not in chosen for e in (unseen[i] if paraphrases else unseen[i][:1])]
    rng.shuffle(prompts)
    return RLPool(tuple(prompts), tuple(heldout), tuple(validation))


def rl_prompts(fmt: CompactFormat, candidates: Sequence[Example], limit: int | None) -> list[tuple[str, Example]]:
    """At most ``limit`` (None: no limit) RL prompts with their examples, in the candidates' order; one example per
    prompt text (two golds behind one prompt would reward contradicting answers)."""
    prompts: dict[str, Example] = {}
    for example in candidates:
        prompts.setdefault(fmt.prompt(example.db_id, example.question), example)
        if limit is not None and len(prompts) >= limit:
            break
    return list(prompts.items())


def measure_sets(
    model: Any, tokenizer: Any, fmt: CompactFormat, sets: Mapping[str, Sequence[Example]], rl: RLSettings
) -> dict[str, SetMeasurement]:
    """:func:`progress_sql.training.heldout.measure` on each held-out set, within the run's turn budget
    and in the run's environment (its profile: ODT, feedback)."""
    env = rl.env_config()
    return {name: measure(model, tokenizer, fmt, items, turns=rl.turns, env_config=env) for name, items in sets.items()}


@dataclass(frozen=True, slots=True)
class EmbeddedData:
    """The embedded default's data for one seed: the template dataset, the RL pool and the held-out sets
    (the template sets, the RL pool's own held-out set, and ``real_test``)."""

    data: TemplateDataset
    pool: RLPool
    held_out: dict[str, list[Example]]

    @property
    def sizes(self) -> dict[str, int]:
        sizes = {
            "train": len(self.data.train),
            "real_train": len(self.data.real_train),
            "rl_pool": len(self.pool.prompts),
        }
        return sizes | {name: len(examples) for name, examples in self.held_out.items()}


def embedded_data(config: TrainConfig) -> EmbeddedData:
    """Data phase of the embedded default (deterministic for ``config.seed``)."""
    from progress_sql.data.embedded import embedded_databases
    from progress_sql.training.templates import build_dataset

    databases = embedded_databases()
    data = build_dataset(databases, seed=config.seed, heldout_size=config.heldout_size)
    pool = rl_pool(data, databases, config.seed, config.heldout_rl_size, validation_size=config.sft_validation_size)
    held_out = {
        "heldout_new_combo": data.heldout_new_combo,
        "heldout_new_value": data.heldout_new_value,
        "heldout_rl_kind": list(pool.heldout),
        "real_test": data.real_test,
    }
    return EmbeddedData(data, pool, held_out)


def sft_checkpoint(out: Path) -> Path:
    """Where a run folder keeps its supervised checkpoint."""
    return out / "checkpoints" / "sft"


def warm_start(
    config: TrainConfig, data: TemplateDataset, phase: Phase, validation: Sequence[Example] = ()
) -> tuple[Any, Any, dict[str, Any]]:
    """The supervised warm start of the embedded default: ``(model, tokenizer, sft figures)``, read back
    from ``config.out``'s checkpoint when it is there (figures with ``resumed``), else trained and saved.
    With ``config.sft_target`` and a ``validation`` set it ends once greedy EX there reaches the target
    (:class:`progress_sql.training.sft.EarlyStop`); the figures keep every check."""
    from progress_sql.training.model import build_model
    from progress_sql.training.sft import EarlyStop, run_sft, sft_examples
    from progress_sql.training.tokenizer import train_tokenizer

    fmt = CompactFormat()
    sft_dir = sft_checkpoint(config.out)
    if (sft_dir / "config.json").is_file():
        model, tokenizer = load_checkpoint(sft_dir)
        return model, tokenizer, json.loads((sft_dir / "sft.json").read_text(encoding="utf-8")) | {"resumed": True}
    texts = [f"{fmt.prompt(e.db_id, e.question)}{fmt.answer(e.gold_sql)}" for e in [*data.train, *data.real_train]]
    tokenizer = train_tokenizer(texts)
    model = build_model(tokenizer, size=config.model, seed=config.seed)
    examples = sft_examples([*data.train, *data.real_train * 5], fmt, seed=config.seed)
    advance = phase("supervised warm start (steps)", config.sft_steps)
    checks: list[dict[str, Any]] = []

    def reached(step: int) -> bool:
        accuracy = evaluate(model, tokenizer, fmt, {"validation": list(validation)})["validation"]
        checks.append({"step": step, "validation_ex": round(accuracy.ex, 4)})
        return accuracy.ex >= (config.sft_target or 0.0)

    stop = None
    if config.sft_target is not None and validation:
        stop = EarlyStop(reached, config.sft_check_from, config.sft_check_every, config.sft_cooldown_steps)
    report = run_sft(
        model, tokenizer, examples, max_steps=config.sft_steps, max_seconds=None, seed=config.seed,
        progress=lambda _step: advance(1), stop=stop,
    )  # fmt: skip
    sft: dict[str, Any] = {"steps": report.steps, "seconds": round(report.seconds, 1), "final_loss": report.final_loss}
    if stop is not None:
        sft |= {"target": config.sft_target, "validation_size": len(validation), "checks": checks,
                "stopped_at_check": report.stopped_at_check}  # fmt: skip
    model.save_pretrained(sft_dir)
    tokenizer.save_pretrained(sft_dir)
    (sft_dir / "sft.json").write_text(json.dumps(sft) + "\n", encoding="utf-8")
    return model, tokenizer, sft


def write_config(config: Any, out: Path) -> None:
    """``<out>/config.json``: every setting of a run (a dataclass)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(_jsonable(asdict(config)), indent=2) + "\n", encoding="utf-8")


#: ``summary.json``'s ``leakage`` of the embedded default: the guard is not run on it (docs/training.md).
EMBEDDED_LEAKAGE: dict[str, Any] = {
    "decision": "not applied",
    "reason": "the embedded default trains on the package's own generated data, not on a user's training set: "
    "templates and questions over two Spider dev databases (concert_singer, pets_1), which it also evaluates "
    "on; a model from it has seen those schemas, so never score it on Spider dev",
}


def run_embedded(config: TrainConfig, phase: Phase) -> RunResult:
    """The CPU default: data, tokenizer, tiny model, SFT, EX, RL, EX, guard (see the module docstring)."""
    configure_threads(config.threads)
    started = time.perf_counter()
    out = config.out
    write_config(config, out)
    result = RunResult(config, leakage=dict(EMBEDDED_LEAKAGE))
    fmt = CompactFormat()
    embedded = embedded_data(config)
    pool, held_out = embedded.pool, embedded.held_out
    result.data_sizes = embedded.sizes
    sft_dir = sft_checkpoint(out)
    model, tokenizer, result.sft = warm_start(config, embedded.data, phase, embedded.pool.validation)

    advance = phase("EX before RL", 1)
    result.before_detail = measure_sets(model, tokenizer, fmt, held_out, config.rl)
    result.before = {name: m.single for name, m in result.before_detail.items()}
    advance(1)
    prompts = rl_prompts(fmt, pool.prompts, config.rl_prompts)
    result.rl_data = {
        "source": "template pairs unseen by the warm start and the held-out sets",
        "prompts": len(prompts),
    }
    with ExecutionPool(workers=1) as execution:
        runs = [(config.rl.reward, out / "rl", model)]
        if config.compare_reward is not None:
            runs.append((config.compare_reward, out / f"rl-{config.compare_reward}", load_checkpoint(sft_dir)[0]))
        for reward, folder, policy in runs:
            advance = phase(f"RL ({config.rl.preset}, reward {reward})", config.rl.steps)
            settings = replace(config.rl, reward=reward)
            selector = _selector(config, policy, tokenizer, fmt, pool.validation)
            on_step = advancer(advance) if selector is None else _both(advancer(advance), selector.on_step)
            result.rl[reward] = run_rl(policy, tokenizer, fmt, prompts, settings, folder, execution, on_step=on_step)
            if selector is not None:
                selector.check(result.rl[reward].steps)  # the last step, where it is no multiple of the interval
                result.rl_selection[reward] = selector.as_dict(config.rl_select)
                if reward == config.rl.reward and selector.best_step != result.rl[reward].steps:
                    result.last_after = evaluate(policy, tokenizer, fmt, held_out)
                selector.restore()
            policy.save_pretrained(folder / "final")
            tokenizer.save_pretrained(folder / "final")
        if config.compare_reward is not None:
            advance = phase("EX after RL, compared reward", 1)
            result.compare_after = evaluate(runs[1][2], tokenizer, fmt, held_out)
            advance(1)
    advance = phase("EX after RL", 1)
    result.after_detail = measure_sets(model, tokenizer, fmt, held_out, config.rl)
    result.after = {name: m.single for name, m in result.after_detail.items()}
    advance(1)
    result.guard = _guard(result, sft_dir, out)
    result.seconds = time.perf_counter() - started
    if result.seconds > config.expected_seconds:
        result.warnings.append(
            f"the run took {result.seconds:.0f} s, more than the {config.expected_seconds:.0f} s expected of the "
            "default on 2 cores: a slower or busier machine (budgets are in steps, so the figures are unaffected)"
        )
    return result


def _selector(
    config: TrainConfig, model: Any, tokenizer: Any, fmt: CompactFormat, validation: Sequence[Example]
) -> BestOnValidation | None:
    """The RL run's checkpoint selector with its step-0 check (the warm start), or None when the
    last step's weights are kept (``rl_select = "last"``, or no validation set)."""
    if config.rl_select != "validation" or not validation:
        return None
    sets = {"validation": list(validation)}
    selector = BestOnValidation(model, lambda: evaluate(model, tokenizer, fmt, sets)["validation"].ex,
                                config.rl_check_every)  # fmt: skip
    selector.check(0)
    return selector


def _both(first: Callable[[int], None], second: Callable[[int], None]) -> Callable[[int], None]:
    def call(step: int) -> None:
        first(step)
        second(step)

    return call


def advancer(advance: Callable[[int], None]) -> Callable[[int], None]:
    """A per-step callback bound to this phase's bar (not to a loop variable)."""
    return lambda _step: advance(1)


def run_pretrained(config: TrainConfig, task: str, data_dir: Path | None, phase: Phase) -> RunResult:
    """RL for an existing model (a local folder or hub name) on ``task``, with the paper's prompts
    when the tokenizer has a chat template. Every tenth example is held out for EX before and after."""
    import torch

    from progress_sql.backends.hf import load_tokenizer
    from progress_sql.models import load_causal_lm, resolve_model

    configure_threads(config.threads)
    started = time.perf_counter()
    out = config.out
    train, held_out, dropped, decision = _task_data(config, task, data_dir, phase)
    resolved = resolve_model(config.model)
    tokenizer = load_tokenizer(resolved)
    model = load_causal_lm(resolved)  # fp32: the optimizer's master weights
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    cuda = torch.cuda.is_available()
    processes = world_size()
    if cuda:  # each process of an `accelerate launch` on its own GPU
        model = model.to(f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}")
    style = prompt_style(config.prompt)
    fmt: ConversationFormat = ChatTemplateFormat(tokenizer, style) if tokenizer.chat_template else CompactFormat()
    sizes = {"train": len(train), "dropped_by_filter": dropped, "heldout": len(held_out["heldout"])}
    result = RunResult(config, data_sizes=sizes, leakage=decision.to_dict())
    # one example per prompt text, as in rl_prompts
    prompts = list(
        {fmt.first_prompt(_chat_messages(e, style), e.db_id, e.question): e for e in train[: config.rl_prompts]}.items()
    )
    # With several processes the trained weights end sharded (ZeRO-3, FSDP): held-out EX is measured
    # afterwards on the saved model with `progress-sql eval` instead (docs/training.md).
    measure_here = processes == 1
    if measure_here:
        advance = phase("EX before RL", 1)
        result.before = evaluate(model, tokenizer, fmt, held_out)
        advance(1)
    final = out / "rl" / "final"
    with ExecutionPool(workers=1) as pool:
        advance = phase(f"RL ({config.rl.preset}, reward {config.rl.reward})", config.rl.steps)
        settings = replace(config.rl, use_cpu=not cuda, env=dict(config.rl.env) | {"prompt": style.name})
        result.rl[config.rl.reward] = run_rl(
            model, tokenizer, fmt, prompts, settings, out / "rl", pool, on_step=lambda _s: advance(1), final=final
        )
    result.precision = precision_record(resolved, model, result.rl)
    if not measure_here:
        result.guard = (
            f"{processes} training processes: the RL model is in {final}; measure held-out EX with "
            "progress-sql eval on it (docs/training.md)"
        )
        result.seconds = time.perf_counter() - started
        return result
    advance = phase("EX after RL", 1)
    result.after = evaluate(model, tokenizer, fmt, held_out)
    advance(1)
    result.guard = _heldout_guard(config, result.before["heldout"], result.after["heldout"])
    result.seconds = time.perf_counter() - started
    return result


def _task_data(
    config: TrainConfig, task: str, data_dir: Path | None, phase: Phase
) -> tuple[list[Example], dict[str, list[Example]], int, Any]:
    """A ``--task`` run's data: the training examples (every tenth held out, the rest through the
    leakage guard and the gold-audit filter), the held-out set, how many the filter dropped, and the
    guard's decision. ``config.json`` is written once the model name resolves."""
    from progress_sql.data.leakage import check_leakage
    from progress_sql.data.loaders import database_problem
    from progress_sql.data.tasks import load_task
    from progress_sql.models import resolve_model

    examples = [e for e in load_task(task, data_dir) if database_problem(e) is None]
    if len(examples) < 2:
        raise DatasetError(f"{task}: fewer than two examples have their database under {data_dir}")
    decision = check_leakage(  # before anything heavy: evaluation databases are refused at once
        [(task, e) for e in examples],
        allow=config.allow_eval_overlap,
        eval_data_dirs=config.eval_data_dirs,
        extra_folders=[data_dir] if data_dir is not None else [],
    )
    resolve_model(config.model)  # a bad --model fails before anything heavy (after the instant leakage guard)
    main = world_rank() == 0  # every process of an `accelerate launch` needs the data; one writes the artefacts
    if main:
        write_config(config, config.out)
    candidates = [e for i, e in enumerate(examples) if i % 10]
    advance = phase(f"gold audit (filter {config.data_filter})", 1)
    train = filter_training_examples(candidates, config.data_filter, config.out if main else None)
    advance(1)
    if not train:
        raise DatasetError(
            f"{task}: the filter {config.data_filter!r} dropped every training example (see dropped.jsonl)"
        )
    return train, {"heldout": examples[::10]}, len(candidates) - len(train), decision


def _heldout_guard(config: TrainConfig, before: Accuracy, after: Accuracy) -> str:
    """The run's verdict on held-out EX: lowered by more than two standard errors, or kept."""
    lowered = after.ex < before.ex - 2 * before.standard_error
    return (
        f"held-out EX {100 * before.ex:.1f}% -> {100 * after.ex:.1f}% "
        f"(2 SE = {200 * before.standard_error:.1f} points): "
        + (f"RL lowered EX; keep the original model {config.model}" if lowered else "the RL model is in rl/final")
    )


def filter_training_examples(examples: Sequence[Example], name: str, out: Path | None) -> list[Example]:
    """The examples that filter set ``name`` keeps; the dropped ones, with reasons, go to
    ``out/dropped.jsonl`` (written even when empty, so a run folder always says what was dropped;
    None: not written, on the processes of a launch other than the main one)."""
    from progress_sql.audit.filters import apply_filter, write_dropped

    outcome = apply_filter(examples, name)
    if out is not None:
        write_dropped(outcome, out / "dropped.jsonl")
    return list(outcome.kept)


def _guard(result: RunResult, sft_dir: Path, out: Path) -> str:
    """Keep the RL model unless it lowered pooled held-out template EX by more than two standard
    errors of the paired difference."""
    change = heldout_change(result)
    assert change is not None, "the embedded run scores every held-out prompt before and after"
    final = out / "final"
    if final.exists():
        shutil.rmtree(final)
    figures = (
        f"held-out template EX {100 * change.before:.1f}% -> {100 * change.after:.1f}% on n = {change.n} "
        f"(paired change {100 * change.difference:+.1f} points, 2 SE = {200 * change.se_difference:.1f})"
    )
    if change.difference < -2 * change.se_difference:
        shutil.copytree(sft_dir, final)
        return f"RL lowered {figures}: the supervised checkpoint is kept"
    shutil.copytree(out / "rl" / "final", final)
    return f"{figures}: the RL checkpoint is kept"


def load_checkpoint(folder: Path) -> tuple[Any, Any]:
    """A saved tiny model and its tokenizer."""
    from transformers import AutoModelForCausalLM

    from progress_sql.backends.hf import load_tokenizer

    return AutoModelForCausalLM.from_pretrained(folder), load_tokenizer(str(folder))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return value
