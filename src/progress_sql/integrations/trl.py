"""TRL integration (the only module that imports TRL): multi-turn rollouts with ODT feedback through
``GRPOTrainer(rollout_func=...)``, the trainer itself, and a reward function for exported TRL rows;
how they fit TRL: docs/architecture.md#the-trl-adapter-integrationstrlpy.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from progress_sql.env.core import EnvConfig, SQLRefineEnv, StepResult, prepare_golds, shared_store, step_many
from progress_sql.env.records import TurnRecord
from progress_sql.errors import ConfigError, DatasetError, GoldQueryError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import ASK_FIELD, SUITE_FIELD, example_fields, row_env_config, trl_example
from progress_sql.heap import generation_heap
from progress_sql.judge.cache import GoldCache
from progress_sql.prompts import ConversationFormat
from progress_sql.registry import lookup
from progress_sql.rewards.registry import RewardContext, get_reward
from progress_sql.rewards.tasks import TERM_COMPONENTS
from progress_sql.types import Example, Trajectory

#: The dataset column that carries each prompt's example id: its position in ``TrlRollout.examples``.
EXAMPLE_ID = "example_id"
#: Where the trainer of :func:`grpo_trainer` keeps the dataset rows of the batch being rolled out.
ROWS_ATTRIBUTE = "rollout_rows"
#: The sampling log-probability TRL's own multi-turn loop gives tokens the environment wrote (tool
#: results; trl@1.16.0 grpo_trainer.py:2156): they were not sampled, and their loss mask is 0.
ENVIRONMENT_LOGPROB = 0.0


def _make_env(config: EnvConfig, pool: ExecutionPool, cache: GoldCache) -> SQLRefineEnv:
    """The only place this adapter builds an environment: one per episode, all on the process's one
    gold store for this config, pool and cache (a prompt's G samples prepare its gold once)."""
    return SQLRefineEnv(config, store=shared_store(config, pool=pool, cache=cache))


@dataclass(frozen=True, slots=True)
class SampledTurn:
    """One model turn as sampled: its tokens (ending with eos when the model stopped by itself) and,
    from vLLM, each token's sampling log-probability (None: the engine had none for that token)."""

    tokens: tuple[int, ...]
    logprobs: tuple[float | None, ...] | None = None


class TokenGenerator(Protocol):
    """Continues each token context with one sampled model turn."""

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]: ...

    def collective(self, trainer: Any) -> bool:
        """True when every training process must make the same calls (the engine call is one collective
        operation across processes): the rollout then calls once per turn of the budget, with no context
        when it has none left, so that no process waits for another that stopped early."""
        ...


def _processes(trainer: Any) -> int:
    return int(getattr(getattr(trainer, "accelerator", None), "num_processes", 1))


def _shards_parameters(trainer: Any) -> bool:
    """Whether the trainer's model is sharded over its processes (DeepSpeed ZeRO-3 or FSDP), so that
    every forward pass is a collective operation."""
    if getattr(trainer, "is_fsdp_enabled", False):
        return True
    plugin = getattr(getattr(getattr(trainer, "accelerator", None), "state", None), "deepspeed_plugin", None)
    return bool(plugin is not None and getattr(plugin, "zero_stage", 0) == 3)


@dataclass(slots=True)
class ModelGenerator:
    """Samples with the trainer's own model (``model.generate``), left-padded batches, no gradients;
    with ``bf16_autocast`` the forward passes compute in bf16 over the (fp32) weights."""

    tokenizer: Any
    max_new_tokens: int = 48
    temperature: float = 1.0
    bf16_autocast: bool = False

    def collective(self, trainer: Any) -> bool:
        return False

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]:
        import torch

        if _processes(trainer) > 1 and _shards_parameters(trainer):
            # Each forward of a sharded model gathers parameters from every process, and processes have
            # different numbers of live conversations and turn lengths: they would wait on each other.
            raise ConfigError(
                "the trainer's own model cannot sample multi-turn rollouts when DeepSpeed ZeRO-3 or FSDP shards "
                "it over several processes: generate with vLLM (GRPOConfig use_vllm=True, progress-sql train --vllm)"
            )
        model = trainer.accelerator.unwrap_model(trainer.model)
        pad = self.tokenizer.pad_token_id
        eos = self.tokenizer.eos_token_id
        width = max(len(c) for c in contexts)
        input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts], device=model.device)
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=model.device)
        was_training = model.training
        model.eval()
        autocast = torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=self.bf16_autocast)
        with torch.no_grad(), autocast, generation_heap():
            output = model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                do_sample=self.temperature > 0,
                temperature=self.temperature if self.temperature > 0 else None,
                top_k=0 if self.temperature > 0 else None,
                top_p=1.0 if self.temperature > 0 else None,
                max_new_tokens=self.max_new_tokens,
                pad_token_id=pad,
                eos_token_id=eos,
            )
        if was_training:
            model.train()
        turns = []
        for row in output[:, width:].tolist():
            if eos in row:
                row = row[: row.index(eos) + 1]  # keep eos: the model must learn to stop
            turns.append(SampledTurn(tuple(token for token in row if token != pad or token == eos)))
        return turns


def _sampled(
    completions: Sequence[Sequence[int]], logprobs: Sequence[Sequence[Sequence[float | None]]] | None
) -> list[SampledTurn]:
    """TRL's vLLM output as turns: ``logprobs`` has one list per token, the sampled token's first
    (trl@1.16.0 vllm_generation.py:70-99 sorts them by rank; grpo_trainer.py:1782 keeps ``lp[0]``)."""
    if logprobs is None:
        return [SampledTurn(tuple(tokens)) for tokens in completions]
    return [
        SampledTurn(tuple(tokens), tuple(position[0] for position in positions))
        for tokens, positions in zip(completions, logprobs, strict=True)
    ]


@dataclass(slots=True)
class VLLMGenerator:
    """Samples with the trainer's vLLM engine (``GRPOConfig(use_vllm=True)``), one request per context,
    and returns each token's sampling log-probability (TRL's importance-sampling correction, on by
    default, compares them with the trainer's own).

    Colocate mode: each process asks its own engine for its own contexts. Server mode: one engine for
    all processes, so every process calls once per turn of the budget (:meth:`collective`) and the
    main process sends every process's contexts in one request, each process taking its own share back
    by count (TRL's ``VLLMGeneration.generate`` slices by an equal count per process, which the
    processes' different numbers of live conversations would break). The per-turn token limit is the
    engine's (``GRPOConfig(generation_kwargs={"max_tokens": ...})``)."""

    eos_token_id: int
    #: How many turns' worth of engine calls this generator made (for tests and run reports).
    calls: int = 0

    def collective(self, trainer: Any) -> bool:
        return str(trainer.vllm_generation.mode) == "server"

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]:
        engine = trainer.vllm_generation
        self.calls += 1
        if self.collective(trainer):
            return self._one_request_for_all_processes(contexts, trainer)
        if int(getattr(engine, "tensor_parallel_size", 1)) > 1:
            # trl@1.16.0 vllm_generation.py:685-691,735-741: the contexts of a tensor-parallel group are
            # gathered and sliced by an equal count per process, which per-turn calls cannot guarantee.
            raise ConfigError(
                "multi-turn rollouts cannot use colocated vLLM with vllm_tensor_parallel_size > 1 (its processes "
                "must send equal batches every turn): use tensor parallel size 1 or vllm_mode='server'"
            )
        if not contexts:
            return []
        _prompts, completions, logprobs, *_ = engine.generate(
            prompts=[list(c) for c in contexts], images=None, num_generations=1
        )
        return _sampled(completions, logprobs)

    def _one_request_for_all_processes(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]:
        from accelerate.utils import broadcast_object_list, gather_object

        engine = trainer.vllm_generation
        accelerator = trainer.accelerator
        # gather_object concatenates the processes' lists: one list per process keeps the counts.
        per_process: list[list[list[int]]] = gather_object([[list(c) for c in contexts]])
        payload: list[Any] = [None]
        if accelerator.is_main_process:
            every = [c for share in per_process for c in share]
            payload = [_server_generate(engine, every) if every else ([], None)]
        broadcast_object_list(payload, from_process=0)
        completions, logprobs = payload[0]
        start = sum(len(share) for share in per_process[: accelerator.process_index])
        mine = slice(start, start + len(contexts))
        return _sampled(completions[mine], logprobs[mine] if logprobs is not None else None)


def _server_generate(engine: Any, prompts: list[list[int]]) -> tuple[list[list[int]], Any]:
    """One completion per prompt from TRL's vLLM client, with the sampling settings TRL's own server
    call uses (trl@1.16.0 vllm_generation.py:612-633)."""
    output = engine.vllm_client.generate(
        prompts=prompts,
        features=None,
        n=1,
        repetition_penalty=engine.repetition_penalty,
        temperature=engine.temperature,
        top_p=engine.top_p,
        top_k=engine.top_k,
        min_p=0.0 if engine.min_p is None else engine.min_p,
        max_tokens=engine.max_completion_length,
        logprobs=engine.logprobs,
        structured_outputs_regex=engine.structured_outputs_regex,
        generation_kwargs=engine.generation_kwargs,
    )
    return output["completion_ids"], output["logprobs"]


#: Batches in a row with only empty first turns before the rollout stops the run.
SILENT_BATCHES_BEFORE_FAILING = 3


@dataclass
class _Batch:
    """The token streams of one call's episodes as they grow turn by turn (position = episode)."""

    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    env_mask: list[list[int]]
    logprobs: list[list[float | None]]
    finals: list[Any]
    records: list[list[TurnRecord]]
    gold_errors: list[str]
    budget_stopped: list[bool]
    sampled_logprobs: bool = True

    @classmethod
    def start(cls, prompt_ids: list[list[int]]) -> _Batch:
        n = len(prompt_ids)
        return cls(
            prompt_ids, [[] for _ in range(n)], [[] for _ in range(n)], [[] for _ in range(n)],
            [None] * n, [[] for _ in range(n)], [""] * n, [False] * n,
        )  # fmt: skip


@dataclass(slots=True)
class TrlRollout:
    """The ``rollout_func``: one environment episode per received prompt, about the example of its
    dataset row (``examples[row["example_id"]]``, or the row itself when it is a
    ``progress-sql export --format trl`` row); the fields it returns per completion:
    docs/architecture.md#the-trl-adapter-integrationstrlpy."""

    examples: Sequence[Example]
    tokenizer: Any
    format: ConversationFormat
    generator: TokenGenerator
    env_config: EnvConfig = field(default_factory=EnvConfig)
    pool: ExecutionPool | None = None
    cache: GoldCache = field(default_factory=GoldCache)
    #: Token budget of a whole completion (model turns and feedback turns: ``--max-completion-tokens``).
    #: TRL enforces ``max_completion_length`` in its own tool loop only, never on a ``rollout_func``'s
    #: output, so the rollout keeps it: a turn is cut at the budget, and a trajectory with no room left
    #: for the feedback and one more token ends there, scored as it stands, its last record saying so
    #: (``stopped``). None: the turn limit alone.
    completion_budget: int | None = None
    #: Every trajectory of the last call (for tests and run reports).
    last_trajectories: list[Trajectory] = field(default_factory=list)
    #: The last call's examples and each episode's turn records (``train``'s rollout log, read by
    #: ``progress-sql inspect``).
    last_examples: list[Example] = field(default_factory=list)
    last_records: list[list[TurnRecord]] = field(default_factory=list)
    #: Batches in a row whose first turn was empty for every prompt (see SILENT_BATCHES_BEFORE_FAILING).
    silent_batches: int = 0

    def __post_init__(self) -> None:
        self.env_config = replace(self.env_config, schema_profile="none")

    def _check_not_silent(self, first_turns: Sequence[Sequence[int]]) -> None:
        """A batch whose first turns are all empty is model behaviour (a barely trained model may stop at
        once: scored as data, with a warning); the same batch after batch is a tokenizer whose eos / pad
        ids do not match the model, or max_new_tokens of 0: fail fast instead of training on nothing."""
        if any(self._text(tokens).strip() for tokens in first_turns):
            self.silent_batches = 0
            return
        self.silent_batches += 1
        message = "the model produced no tokens for any prompt of this batch"
        hint = "check that the tokenizer's eos and pad ids match the model and that max_new_tokens > 0"
        if self.silent_batches >= SILENT_BATCHES_BEFORE_FAILING:
            raise ConfigError(f"{message}, {self.silent_batches} batches in a row: {hint}")
        warnings.warn(f"{message} (if this repeats, {hint})", RuntimeWarning, stacklevel=3)

    def _tokens(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _text(self, tokens: Sequence[int]) -> str:
        special = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        return str(self.tokenizer.decode([t for t in tokens if t not in special], skip_special_tokens=False))

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """TRL's call: the examples are those of the rows the trainer kept (:func:`grpo_trainer`); a
        conversational prompt (an exported row's messages) is rendered with the format."""
        rows = getattr(trainer, ROWS_ATTRIBUTE, None)
        if rows is None or len(rows) != len(prompts):
            raise ConfigError(
                "the trainer passed no dataset row per prompt: build it with grpo_trainer, from a dataset with an "
                f"{EXAMPLE_ID} column or from progress-sql export --format trl rows"
            )
        examples = [self._example(row) for row in rows]
        texts = [
            prompt if isinstance(prompt, str) else self.format.first_prompt(list(prompt), e.db_id, e.question)
            for prompt, e in zip(prompts, examples, strict=True)
        ]
        configs = [row_env_config(self.env_config, row) for row in rows]  # a row's suite, backend, offered <ask>
        return self.episodes(texts, examples, trainer, configs=configs)

    def _example(self, row: Mapping[str, Any]) -> Example:
        if row.get(EXAMPLE_ID) is None:
            return trl_example(row)  # an exported row describes its example in its own columns
        index = int(row[EXAMPLE_ID])
        if not 0 <= index < len(self.examples):
            raise ConfigError(
                f"rollout {EXAMPLE_ID} {index} not in the training examples (0..{len(self.examples) - 1})"
            )
        return self.examples[index]

    def episodes(
        self,
        prompts: Sequence[str],
        examples: Sequence[Example],
        trainer: Any,
        *,
        configs: Sequence[EnvConfig] | None = None,
    ) -> dict[str, Any]:
        """One episode per prompt text, about the example at the same position (with the config at
        that position of ``configs``: a row's test suite; else :attr:`env_config`). An episode whose gold
        query fails or times out (or whose database is missing) gets one model turn, no feedback, every
        reward component 0 and its ``gold_error`` (a row the environment cannot score is data, not a
        reason to end the run)."""
        if self.pool is None:
            self.pool = ExecutionPool(workers=1)
        chosen = configs if configs is not None else [self.env_config] * len(prompts)
        envs = [_make_env(config, self.pool, self.cache) for config in chosen]
        batch = _Batch.start([self._tokens(prompt) for prompt in prompts])
        prepare_golds(list(zip(envs, examples, strict=True)))  # the batch's new golds run together
        for position, (env, example) in enumerate(zip(envs, examples, strict=True)):
            try:
                env.reset(example)
            except (GoldQueryError, DatasetError) as error:  # a bad gold, or its database missing here
                batch.gold_errors[position] = str(error)
        active = list(range(len(prompts)))
        collective = self.generator.collective(trainer)
        for _ in range(self.env_config.max_turns):
            if not active and not collective:
                break
            turns = self.generator([batch.prompt_ids[i] + batch.completion_ids[i] for i in active], trainer)
            if active and not batch.completion_ids[active[0]]:
                self._check_not_silent([turn.tokens for turn in turns])
            taken = [(i, *self._sampled_into(batch, i, turn)) for i, turn in zip(active, turns, strict=True)]
            taken = [(i, turn, sampled) for i, turn, sampled in taken if not batch.gold_errors[i]]  # unscored: ends
            # The turn's SQL of every going episode reaches the workers in one batch.
            steps = step_many([(envs[i], self._text(turn.tokens)) for i, turn, _ in taken])
            active = [i for (i, turn, sampled), step in zip(taken, steps, strict=True)
                      if self._after_step(batch, i, envs[i], turn, sampled, step)]  # fmt: skip
        self.last_trajectories = [env.trajectory for env in envs]
        self.last_examples, self.last_records = list(examples), batch.records
        unscored = dict.fromkeys(component_names(self.env_config.reward), 0.0)
        return {
            "prompt_ids": batch.prompt_ids,
            "completion_ids": batch.completion_ids,
            "logprobs": batch.logprobs if batch.sampled_logprobs else None,
            "env_mask": batch.env_mask,
            "reward_components": [dict(b.components) if b is not None else dict(unscored) for b in batch.finals],
            "num_turns": [len(t.turns) for t in self.last_trajectories],
            "k_star": [t.k_star or 0 for t in self.last_trajectories],
            "first_turn_f": [t.turns[0].f if t.turns else 0.0 for t in self.last_trajectories],
            "first_turn_match": [bool(t.turns and t.turns[0].match) for t in self.last_trajectories],
            "final_sql": [t.turns[-1].sql if t.turns else None for t in self.last_trajectories],
            "gold_error": batch.gold_errors,
            "budget_stopped": batch.budget_stopped,
        }

    def _sampled_into(self, batch: _Batch, i: int, turn: SampledTurn) -> tuple[SampledTurn, int]:
        """Episode ``i``'s sampled ``turn``, cut to the completion budget, into its streams; the cut turn
        and how many tokens were sampled."""
        sampled, turn = len(turn.tokens), self._within_budget(turn, len(batch.completion_ids[i]))
        batch.completion_ids[i] += turn.tokens
        batch.env_mask[i] += [1] * len(turn.tokens)
        if turn.logprobs is None:
            batch.sampled_logprobs = False
        else:
            batch.logprobs[i] += turn.logprobs
        return turn, sampled

    def _after_step(
        self, batch: _Batch, i: int, env: SQLRefineEnv, turn: SampledTurn, sampled: int, step: StepResult
    ) -> bool:
        """Episode ``i``'s environment ``step`` on its (cut) ``turn`` into its streams; True while it goes
        on (then the feedback, environment-written with mask 0, is in its completion)."""
        batch.records[i].append(step.info)
        if step.terminated or step.truncated:
            batch.finals[i] = step.info.reward
            if len(turn.tokens) < sampled:
                batch.budget_stopped[i] = True
                batch.records[i][-1] = replace(step.info, stopped=(
                    f"completion budget: this turn cut at {len(turn.tokens)} of {sampled} sampled tokens"
                ))  # fmt: skip
            return False
        assert step.observation is not None
        # A turn cut by the token limit is closed with eos, written by the environment (mask 0).
        eos = int(self.tokenizer.eos_token_id)
        closing = [] if turn.tokens and turn.tokens[-1] == eos else [eos]
        feedback = closing + self._tokens(self.format.feedback(step.observation["content"]))
        spent = len(batch.completion_ids[i]) + len(feedback)
        if self.completion_budget is not None and spent >= self.completion_budget:
            batch.finals[i], batch.budget_stopped[i] = env.episode_reward(), True
            batch.records[i][-1] = replace(
                batch.records[i][-1], feedback=None, reward=batch.finals[i],
                stopped=f"completion budget: {spent} of {self.completion_budget} tokens with the feedback",
            )  # fmt: skip
            return False
        batch.completion_ids[i] += feedback
        batch.env_mask[i] += [0] * len(feedback)
        batch.logprobs[i] += [ENVIRONMENT_LOGPROB] * len(feedback)
        return True

    def _within_budget(self, turn: SampledTurn, spent: int) -> SampledTurn:
        """``turn`` cut to the completion budget's remaining tokens (the environment then judges the cut text)."""
        if self.completion_budget is None or len(turn.tokens) <= self.completion_budget - spent:
            return turn
        room = max(0, self.completion_budget - spent)
        cut = None if turn.logprobs is None else turn.logprobs[:room]
        return replace(turn, tokens=tuple(turn.tokens[:room]), logprobs=cut)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


RewardFunc = Callable[..., list[float]]


def reduced_across_processes(values: Mapping[str, float]) -> tuple[bool, dict[str, float]]:
    """``(whether this is the main process, each value's mean over the training processes)``: a
    collective call, made by every process at the same point (the trainer's ``on_log``). A key some
    processes lack (a statistic of a first-correct turn none of their episodes reached) is averaged
    over those that have it. One process: ``(True, values)``."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    state = PartialState()
    if state.num_processes == 1:
        return True, dict(values)
    gathered: list[Mapping[str, float]] = gather_object([dict(values)])
    keys = dict.fromkeys(key for part in gathered for key in part)
    reduced = {key: sum(part[key] for part in gathered if key in part) / sum(key in part for part in gathered)
               for key in keys}  # fmt: skip
    return bool(state.is_main_process), reduced


def component_names(reward: str, *, task_terms: bool = True) -> tuple[str, ...]:
    """The component names of a registered reward (scored on an empty trajectory), then (with
    ``task_terms``) the terms that write tasks and ambiguous questions add (``rewards/tasks.py``; 0
    where absent)."""
    breakdown = get_reward(reward).score(Trajectory(()), RewardContext(""))
    own = tuple(name for name, _ in breakdown.components)
    return (*own, *TERM_COMPONENTS) if task_terms else own


def component_reward_funcs(reward: str) -> list[RewardFunc]:
    """One TRL reward function per component of ``reward``, named after it (TRL logs each), reading
    the rollout's ``reward_components``; their sum is the trajectory reward."""

    def make(name: str) -> RewardFunc:
        def component(
            prompts: Any, completions: Any, reward_components: Sequence[Mapping[str, float]], **_: Any
        ) -> list[float]:
            return [float(parts.get(name, 0.0)) for parts in reward_components]

        component.__name__ = name
        return component

    return [make(name) for name in component_names(reward)]


@dataclass(frozen=True, slots=True)
class TrainerPreset:
    """GRPOConfig settings of one RL algorithm."""

    name: str
    settings: Mapping[str, Any]
    description: str


#: GSPO's optimizer updates per generated batch, whatever the setting asks: its sequence-level ratios
#: differ from 1 only off-policy (verl's and SkyRL's GSPO recipes make four too).
GSPO_UPDATES = 4


def _gspo_settings(gradient_accumulation_steps: int) -> dict[str, Any]:
    return {
        "loss_type": "grpo",
        "importance_sampling_level": "sequence",
        "beta": 0.0,
        "epsilon": 3e-4,
        "epsilon_high": 4e-4,
        "num_iterations": 1,
        "steps_per_generation": GSPO_UPDATES * gradient_accumulation_steps,
        "gradient_accumulation_steps": gradient_accumulation_steps,
    }


def trainer_preset(
    name: str, gradient_accumulation_steps: int = 1, *, kl_coef: float = 0.0, updates_per_batch: int = 1
) -> TrainerPreset:
    """``grpo``: GRPO as the paper trains it (G = 8, temperature 1.0, ``loss_type="grpo"``: each
    sequence's token mean, then the mean over sequences, trl@1.16.0 grpo_trainer.py:3153-3154; set
    explicitly since TRL defaults to ``dapo``), the KL term ``beta`` = ``kl_coef`` in the loss (k3,
    grpo_trainer.py:3098-3102 and 3149-3150; beta > 0 loads a reference model unless the policy is a PEFT
    model, grpo_trainer.py:983-1003) and ``updates_per_batch`` optimizer updates per generated batch: TRL
    generates once every ``steps_per_generation`` x ``num_iterations`` passes and gives each pass the next
    slice of that batch (grpo_trainer.py:1538-1546), so ``steps_per_generation`` = updates x accumulation
    with ``num_iterations`` 1 makes that many updates on disjoint mini-batches, each sample used once (the
    trainer setting's, ``integrations/trainer_setting.py``). ``gspo``: sequence-level importance sampling,
    no KL term and :data:`GSPO_UPDATES` updates per generation, whatever ``kl_coef`` and
    ``updates_per_batch`` say."""
    grpo = {
        "loss_type": "grpo", "num_generations": 8, "temperature": 1.0, "beta": kl_coef, "num_iterations": 1,
        "steps_per_generation": updates_per_batch * gradient_accumulation_steps,
        "gradient_accumulation_steps": gradient_accumulation_steps,
    }  # fmt: skip
    presets = {
        "grpo": TrainerPreset("grpo", grpo, "GRPO as in the paper (verl GRPO: per-sequence mean of token losses)"),
        "gspo": TrainerPreset(
            "gspo",
            {"num_generations": 8, "temperature": 1.0, **_gspo_settings(gradient_accumulation_steps)},
            "GSPO: sequence-level importance ratios (Zheng et al., 2025)",
        ),
    }
    return lookup(presets, name, "trainer preset")


def rollout_dataset(prompts: Sequence[str]) -> Any:
    """TRL's training dataset: each prompt text with its example id (its position in ``prompts``)."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": list(prompts), EXAMPLE_ID: list(range(len(prompts)))})


def _training_rows(prompts: Sequence[str] | Any) -> Any:
    """The trainer's dataset: :func:`rollout_dataset` of prompt texts, or a dataset as given (rows of
    ``progress-sql export --format trl``, each describing its own example)."""
    if isinstance(prompts, Sequence) and all(isinstance(prompt, str) for prompt in prompts):
        return rollout_dataset(prompts)
    return prompts


def grpo_trainer(
    model: Any,
    tokenizer: Any,
    rollout: Callable[[list[str], Any], dict[str, Any]],
    prompts: Sequence[str] | Any,
    *,
    reward: str,
    args: Mapping[str, Any],
    lora: Mapping[str, Any] | None = None,
    on_log: Callable[[int, Mapping[str, Any]], None] | None = None,
    on_step: Callable[[int], None] | None = None,
) -> Any:
    """A ``GRPOTrainer`` over ``prompts`` (text, the rollout gets ``prompts[i]``'s id ``i``; or a dataset
    of ``progress-sql export --format trl`` rows, the rollout gets each row) with ``GRPOConfig(**args)``,
    one reward function per component of ``reward``, LoRA adapters when ``lora`` gives
    ``peft.LoraConfig``'s arguments (TRL wraps the model; only the adapters train), and hooks called
    with the step number on every log (with TRL's logs) and at the end of every optimizer step."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    class ExampleIdTrainer(GRPOTrainer):  # type: ignore[misc]  # trl is not type-checked
        """Keeps the batch's dataset rows where the rollout function reads them (TRL 1.16 hands it
        the prompts only; the rows are in this call, in the order the prompts go to the rollout)."""

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> Any:
            setattr(self, ROWS_ATTRIBUTE, [{k: v for k, v in row.items() if k != "prompt"} for row in inputs])
            return super()._generate_and_score_completions(inputs)

    class Hooks(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any) -> None:
            if on_log is not None and logs:
                on_log(state.global_step, logs)

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            if on_step is not None:
                on_step(state.global_step)

        def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **_: Any) -> None:
            if model is not None:
                frozen_layers_out_of_the_graph(model, args)

    trainer = ExampleIdTrainer(
        model=model,
        reward_funcs=component_reward_funcs(reward),
        args=GRPOConfig(**_renamed_checkpointing(args, {f.name for f in dataclasses.fields(GRPOConfig)})),
        train_dataset=_training_rows(prompts),
        processing_class=tokenizer,
        rollout_func=rollout,
        callbacks=[Hooks()],
        peft_config=_lora_config(lora) if lora is not None else None,
    )
    # With disable_tqdm, transformers prints every log dict to stdout; our callers show a progress bar
    # and write the logs to metrics.jsonl, so the printer only floods the terminal.
    trainer.remove_callback(PrinterCallback)
    hf_logging.disable_progress_bar()  # "Writing model shards" at every checkpoint would break our bar
    # TRL 1.16 calls transformers' renamed gradient-checkpointing methods at every step; the warning is
    # about TRL's code, not the user's, and would repeat hundreds of times.
    warnings.filterwarnings("ignore", r"`(is_)?gradient_checkpointing\w*` is deprecated", FutureWarning)
    return trainer


def _renamed_checkpointing(args: Mapping[str, Any], fields: Collection[str]) -> dict[str, Any]:
    """``args`` with activation checkpointing under transformers 5's name: TRL 1.16's configs default the
    old ``gradient_checkpointing`` to True (trl@1.16.0 trainer/base_config.py:62), and transformers
    5.24's ``TrainingArguments`` warns (a FutureWarning in every run's log) when it resolves the old name
    into ``activation_checkpointing`` (training_args.py:1533-1545). Given the new name, it does not; the
    values are TRL's default or the caller's, under either name. ``fields``: the config's field names;
    an older transformers (5.17, a GPU machine's) has only the old name, and ``args`` go as they are."""
    settings = dict(args)
    if "activation_checkpointing" not in fields:
        return settings
    settings.setdefault("activation_checkpointing", settings.pop("gradient_checkpointing", True))
    if "gradient_checkpointing_kwargs" in settings:
        settings.setdefault("activation_checkpointing_kwargs", settings.pop("gradient_checkpointing_kwargs"))
    return settings


def frozen_layers_out_of_the_graph(model: Any, args: Any) -> bool:
    """Undo what activation checkpointing adds for reentrant checkpoints only: transformers' Trainer
    enables it in ``train()`` and makes the input embeddings require a gradient (``enable_input_require_grads``),
    so that every layer, frozen or not, enters the autograd graph and the backward pass runs through all of
    them. Non-reentrant checkpointing (transformers 5's default) needs no such input: the frozen layers
    below the trainable ones then stay out of the graph (the same gradients; on this CPU a 16-sequence RL
    pass took 0.56x the time and 0.45x the memory: docs/benchmarks.md). True when the hook was removed."""
    if not getattr(args, "activation_checkpointing", False):
        return False
    if (getattr(args, "activation_checkpointing_kwargs", None) or {}).get("use_reentrant", False):
        return False  # reentrant checkpoints need an input that requires a gradient
    if not getattr(model, "_require_grads_hooks", None):  # transformers' list of the hooks it added
        return False
    model.disable_input_require_grads()
    return True


#: Tokens per tile of TRL's fused LM head on a CPU (TRL's own: 4,096, sized for GPU memory).
CPU_LM_HEAD_TOKENS = 512


@contextmanager
def cpu_lm_head(device_type: str) -> Iterator[None]:
    """On a CPU, TRL's fused LM head (``fused_lm_head=True``, trl@1.16.0 trainer/utils.py:1629-1660) as
    it runs on CUDA, in smaller tiles; elsewhere, TRL's as it is.

    Without Triton, TRL scores every position, the prompt's and the padding's included (``compact =
    _use_triton(...)``, to keep Neuron's compiled tile shapes fixed), in tiles of 4,096 tokens x 32,768
    vocabulary entries whose fp32 temporaries in ``_forward_tile`` / ``_backward_tile`` reach about 3 GB:
    that was the peak of a CPU RL step (docs/benchmarks.md). Scoring only the completion positions is
    TRL's CUDA path (the same per-row arithmetic), and 512-token tiles bound the temporaries."""
    if device_type != "cpu":
        yield
        return
    import trl.kernels.chunked_logprob as kernel
    import trl.trainer.utils as trl_utils

    # both names are read at call time; tests/integrations/test_trl_lm_head.py fails if a TRL upgrade moves them
    original_use_triton, original_tokens = trl_utils._use_triton, kernel.TOKEN_CHUNK_SIZE

    def compact_on_cpu(device: Any) -> bool:
        return device.type == "cpu" or bool(original_use_triton(device))

    trl_utils._use_triton, kernel.TOKEN_CHUNK_SIZE = compact_on_cpu, CPU_LM_HEAD_TOKENS
    try:
        yield
    finally:
        trl_utils._use_triton, kernel.TOKEN_CHUNK_SIZE = original_use_triton, original_tokens


def _lora_config(lora: Mapping[str, Any]) -> Any:
    """``peft.LoraConfig`` for a causal language model (peft: the ``[trl]`` extra)."""
    try:
        from peft import LoraConfig
    except ImportError as error:
        raise ConfigError("LoRA needs the peft package: pip install -c constraints.txt -e '.[trl]'") from error
    return LoraConfig(task_type="CAUSAL_LM", **lora)


#: The columns of an exported TRL row that describe its example and how its episode runs.
_EXAMPLE_COLUMNS = frozenset({*example_fields(Example(0, "", "", "", "")), "index", SUITE_FIELD, ASK_FIELD})


class ExportedRowReward:
    """A TRL reward function for ``progress-sql export --format trl`` rows: each completion scored by
    the environment as the one answer to its row with ``config``'s reward (0 when the gold fails or
    times out, or its database is missing); named after the reward; ``close`` stops its worker.
    docs/architecture.md#the-trl-adapter-integrationstrlpy."""

    def __init__(self, config: EnvConfig | None = None) -> None:
        self.config = replace(config or EnvConfig(), max_turns=1, schema_profile="none")
        self.__name__ = self.config.reward
        self.cache = GoldCache()
        self.pool: ExecutionPool | None = None

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        if self.pool is None:
            self.pool = ExecutionPool(workers=1)
        named = {key: values for key, values in columns.items() if key in _EXAMPLE_COLUMNS}
        rewards = [0.0] * len(completions)  # a row whose gold fails or whose database is missing: no signal
        rows = [{key: values[position] for key, values in named.items()} for position in range(len(completions))]
        episodes = [
            (_make_env(row_env_config(self.config, row), self.pool, self.cache), trl_example(row)) for row in rows
        ]
        prepare_golds(episodes)  # the batch's new golds run together
        scored: list[tuple[int, SQLRefineEnv, str]] = []
        for position, ((env, example), completion) in enumerate(zip(episodes, completions, strict=True)):
            try:
                env.reset(example)
            except (GoldQueryError, DatasetError):
                continue
            scored.append((position, env, _text(completion)))
        # The batch's answers reach the workers together (a prompt's G completions often repeat one).
        steps = step_many([(env, text) for _, env, text in scored])
        for (position, _, _), step in zip(scored, steps, strict=True):
            rewards[position] = step.reward
        return rewards

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def _text(completion: Any) -> str:
    """A completion's text: TRL gives conversational rows a list of messages (the answer is last)."""
    if isinstance(completion, str):
        return completion
    return str(completion[-1]["content"]) if completion else ""
