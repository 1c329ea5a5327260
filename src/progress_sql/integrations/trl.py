"""TRL integration (the only module that imports TRL): multi-turn rollouts with ODT feedback through
``GRPOTrainer(rollout_func=...)``, the trainer itself, and a reward function for exported TRL rows;
how they fit TRL: docs/architecture.md#the-trl-adapter-integrationstrlpy.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from progress_sql.env.core import EnvConfig, SQLRefineEnv, shared_store
from progress_sql.errors import ConfigError, GoldQueryError
from progress_sql.execution.cache import GoldCache
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import example_fields, trl_example
from progress_sql.prompts import ConversationFormat
from progress_sql.registry import lookup
from progress_sql.rewards.registry import RewardContext, get_reward
from progress_sql.types import Example, Trajectory

#: The dataset column that carries each prompt's example id: its position in ``TrlRollout.examples``.
EXAMPLE_ID = "example_id"
#: Where the trainer of :func:`grpo_trainer` keeps the example ids of the batch being rolled out.
IDS_ATTRIBUTE = "rollout_example_ids"


def _make_env(config: EnvConfig, pool: ExecutionPool, cache: GoldCache) -> SQLRefineEnv:
    """The only place this adapter builds an environment: one per episode, all on the process's one
    gold store for this config, pool and cache (a prompt's G samples prepare its gold once)."""
    return SQLRefineEnv(config, store=shared_store(config, pool=pool, cache=cache))


class TokenGenerator(Protocol):
    """Continues each token context with one sampled model turn (ending with eos when the model stops)."""

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[list[int]]: ...


@dataclass(slots=True)
class ModelGenerator:
    """Samples with the trainer's own model (``model.generate``), left-padded batches, no gradients."""

    tokenizer: Any
    max_new_tokens: int = 48
    temperature: float = 1.0

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[list[int]]:
        import torch

        model = trainer.accelerator.unwrap_model(trainer.model)
        pad = self.tokenizer.pad_token_id
        eos = self.tokenizer.eos_token_id
        width = max(len(c) for c in contexts)
        input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts], device=model.device)
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=model.device)
        was_training = model.training
        model.eval()
        with torch.no_grad():
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
            turns.append([token for token in row if token != pad or token == eos])
        return turns


@dataclass(slots=True)
class VLLMGenerator:
    """Samples with the trainer's vLLM engine (``GRPOConfig(use_vllm=True)``), one request per
    context; eos is appended when the engine leaves it out, so every model turn ends the same way."""

    eos_token_id: int

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[list[int]]:
        _prompts, completions, _logprobs, *_ = trainer.vllm_generation.generate(
            prompts=[list(c) for c in contexts], images=None, num_generations=1
        )
        return [list(c) if c and c[-1] == self.eos_token_id else [*c, self.eos_token_id] for c in completions]


#: Batches in a row with only empty first turns before the rollout stops the run.
SILENT_BATCHES_BEFORE_FAILING = 3


@dataclass(slots=True)
class TrlRollout:
    """The ``rollout_func``: one environment episode per received prompt, about ``examples[id]`` (the
    dataset's :data:`EXAMPLE_ID` column); the fields it returns per completion:
    docs/architecture.md#the-trl-adapter-integrationstrlpy."""

    examples: Sequence[Example]
    tokenizer: Any
    format: ConversationFormat
    generator: TokenGenerator
    env_config: EnvConfig = field(default_factory=EnvConfig)
    pool: ExecutionPool | None = None
    cache: GoldCache = field(default_factory=GoldCache)
    #: Every trajectory of the last call (for tests and run reports).
    last_trajectories: list[Trajectory] = field(default_factory=list)
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

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        """TRL's call: the examples are those of the ids the trainer kept (:func:`grpo_trainer`)."""
        ids = getattr(trainer, IDS_ATTRIBUTE, None)
        if ids is None or len(ids) != len(prompts):
            raise ConfigError(
                f"the trainer passed no {EXAMPLE_ID} per prompt: build it with grpo_trainer, from a dataset with "
                f"an {EXAMPLE_ID} column"
            )
        unknown = [i for i in ids if not 0 <= i < len(self.examples)]
        if unknown:
            raise ConfigError(
                f"rollout {EXAMPLE_ID} {unknown[0]} not in the training examples (0..{len(self.examples) - 1})"
            )
        return self.episodes(prompts, [self.examples[i] for i in ids], trainer)

    def episodes(self, prompts: Sequence[str], examples: Sequence[Example], trainer: Any) -> dict[str, Any]:
        """One episode per prompt text, about the example at the same position."""
        if self.pool is None:
            self.pool = ExecutionPool(workers=1)
        envs = [_make_env(self.env_config, self.pool, self.cache) for _ in prompts]
        for env, example in zip(envs, examples, strict=True):
            env.reset(example)
        prompt_ids = [self._tokens(prompt) for prompt in prompts]
        completion_ids: list[list[int]] = [[] for _ in prompts]
        env_mask: list[list[int]] = [[] for _ in prompts]
        finals: list[Any] = [None] * len(prompts)
        active = list(range(len(prompts)))
        for _ in range(self.env_config.max_turns):
            if not active:
                break
            turns = self.generator([prompt_ids[i] + completion_ids[i] for i in active], trainer)
            if not completion_ids[active[0]]:
                self._check_not_silent(turns)
            still_active = []
            for i, tokens in zip(active, turns, strict=True):
                step = envs[i].step(self._text(tokens))
                completion_ids[i] += tokens
                env_mask[i] += [1] * len(tokens)
                if step.terminated or step.truncated:
                    finals[i] = step.info.reward
                    continue
                assert step.observation is not None
                feedback = self._tokens(self.format.feedback(step.observation["content"]))
                completion_ids[i] += feedback
                env_mask[i] += [0] * len(feedback)
                still_active.append(i)
            active = still_active
        self.last_trajectories = [env.trajectory for env in envs]
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion_ids,
            "logprobs": None,
            "env_mask": env_mask,
            "reward_components": [dict(b.components) if b is not None else {} for b in finals],
            "num_turns": [len(t.turns) for t in self.last_trajectories],
            "k_star": [t.k_star or 0 for t in self.last_trajectories],
            "first_turn_f": [t.turns[0].f if t.turns else 0.0 for t in self.last_trajectories],
            "first_turn_match": [bool(t.turns and t.turns[0].match) for t in self.last_trajectories],
            "final_sql": [t.turns[-1].sql if t.turns else None for t in self.last_trajectories],
        }

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


RewardFunc = Callable[..., list[float]]


def component_names(reward: str) -> tuple[str, ...]:
    """The component names of a registered reward (scored on an empty trajectory)."""
    breakdown = get_reward(reward).score(Trajectory(()), RewardContext(""))
    return tuple(name for name, _ in breakdown.components)


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


def _gspo_settings(gradient_accumulation_steps: int) -> dict[str, Any]:
    return {
        "loss_type": "grpo",
        "importance_sampling_level": "sequence",
        "beta": 0.0,
        "epsilon": 3e-4,
        "epsilon_high": 4e-4,
        # Sequence-level ratios only differ from 1 off-policy: several optimizer steps per generation.
        "steps_per_generation": 4 * gradient_accumulation_steps,
        "gradient_accumulation_steps": gradient_accumulation_steps,
    }


def trainer_preset(name: str, gradient_accumulation_steps: int = 1) -> TrainerPreset:
    """``grpo``: the paper's setting (G = 8, temperature 1.0, TRL ``loss_type="grpo"``, the
    per-sequence normalized objective, set explicitly since TRL defaults to ``dapo``); ``gspo``:
    sequence-level importance sampling with more steps per generation than accumulation steps."""
    presets = {
        "grpo": TrainerPreset(
            "grpo",
            {"loss_type": "grpo", "num_generations": 8, "temperature": 1.0, "beta": 0.0,
             "gradient_accumulation_steps": gradient_accumulation_steps},
            "GRPO as in the paper (verl GRPO: per-sequence mean of token losses)",
        ),
        "gspo": TrainerPreset(
            "gspo",
            {"num_generations": 8, "temperature": 1.0, **_gspo_settings(gradient_accumulation_steps)},
            "GSPO: sequence-level importance ratios (Zheng et al., 2025)",
        ),
    }  # fmt: skip
    return lookup(presets, name, "trainer preset")


def rollout_dataset(prompts: Sequence[str]) -> Any:
    """TRL's training dataset: each prompt text with its example id (its position in ``prompts``)."""
    from datasets import Dataset

    return Dataset.from_dict({"prompt": list(prompts), EXAMPLE_ID: list(range(len(prompts)))})


def grpo_trainer(
    model: Any,
    tokenizer: Any,
    rollout: Callable[[list[str], Any], dict[str, Any]],
    prompts: Sequence[str],
    *,
    reward: str,
    args: Mapping[str, Any],
    lora: Mapping[str, Any] | None = None,
    on_log: Callable[[int, Mapping[str, Any]], None] | None = None,
    on_step: Callable[[int], None] | None = None,
) -> Any:
    """A ``GRPOTrainer`` over ``prompts`` (text; the rollout gets ``prompts[i]``'s id ``i``) with
    ``GRPOConfig(**args)``, one reward function per component of ``reward``, LoRA adapters when
    ``lora`` gives ``peft.LoraConfig``'s arguments (TRL wraps the model; only the adapters train), and
    hooks called with the step number on every log (with TRL's logs) and at the end of every optimizer step."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    class ExampleIdTrainer(GRPOTrainer):  # type: ignore[misc]  # trl is not type-checked
        """Keeps the batch's example ids where the rollout function reads them (TRL 1.16 hands it
        the prompts only; the rows are in this call, in the order the prompts go to the rollout)."""

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> Any:
            setattr(self, IDS_ATTRIBUTE, [int(row[EXAMPLE_ID]) for row in inputs])
            return super()._generate_and_score_completions(inputs)

    class Hooks(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **_: Any) -> None:
            if on_log is not None and logs:
                on_log(state.global_step, logs)

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            if on_step is not None:
                on_step(state.global_step)

    trainer = ExampleIdTrainer(
        model=model,
        reward_funcs=component_reward_funcs(reward),
        args=GRPOConfig(**args),
        train_dataset=rollout_dataset(prompts),
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


def _lora_config(lora: Mapping[str, Any]) -> Any:
    """``peft.LoraConfig`` for a causal language model (peft: the ``[trl]`` extra)."""
    try:
        from peft import LoraConfig
    except ImportError as error:
        raise ConfigError("LoRA needs the peft package: pip install -c constraints.txt -e '.[trl]'") from error
    return LoraConfig(task_type="CAUSAL_LM", **lora)


#: The columns of an exported TRL row that describe its example.
_EXAMPLE_COLUMNS = frozenset({*example_fields(Example(0, "", "", "", "")), "index"})


class ExportedRowReward:
    """A TRL reward function for ``progress-sql export --format trl`` rows: each completion scored by
    the environment as the one answer to its row with ``config``'s reward (0 when the gold fails);
    named after the reward; ``close`` stops its worker. docs/architecture.md#the-trl-adapter-integrationstrlpy."""

    def __init__(self, config: EnvConfig | None = None) -> None:
        self.config = replace(config or EnvConfig(), max_turns=1, schema_profile="none")
        self.__name__ = self.config.reward
        self.cache = GoldCache()
        self.pool: ExecutionPool | None = None

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any) -> list[float]:
        if self.pool is None:
            self.pool = ExecutionPool(workers=1)
        named = {key: values for key, values in columns.items() if key in _EXAMPLE_COLUMNS}
        rewards = []
        for position, completion in enumerate(completions):
            example = trl_example({key: values[position] for key, values in named.items()})
            env = _make_env(self.config, self.pool, self.cache)
            try:
                env.reset(example)
            except GoldQueryError:  # nothing to compare with: no signal from this row
                rewards.append(0.0)
                continue
            rewards.append(env.step(_text(completion)).reward)
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
