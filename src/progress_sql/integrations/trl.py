"""TRL integration: multi-turn rollouts with ODT feedback through ``GRPOTrainer(rollout_func=...)``.

TRL 1.16's ``rollout_func`` is the one TRL route that reproduces the paper exactly: each sampled
completion is a whole trajectory (answer, feedback user turn, answer, ...), the feedback tokens are
masked out of the loss with ``env_mask`` = 0, and the trajectory stops at the first execution
match or after T turns. The environment scores the trajectory with the configured reward; one TRL
reward function per reward component returns that component, so TRL logs each one
(``rewards/<component>/mean``) and their sum is the trajectory reward.

TRL hands ``rollout_func`` the per-process prompts already repeated ``num_generations`` times;
it returns one completion per prompt it receives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from progress_sql.env.core import EnvConfig, SQLRefineEnv
from progress_sql.errors import ConfigError
from progress_sql.execution.cache import GoldCache
from progress_sql.execution.pool import ExecutionPool
from progress_sql.registry import lookup
from progress_sql.rewards.baselines import RewardContext
from progress_sql.rewards.registry import get_reward
from progress_sql.prompts import ConversationFormat
from progress_sql.types import Example, Trajectory


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
    """Samples with the trainer's vLLM engine (``GRPOConfig(use_vllm=True)``, colocate or server mode).

    TRL keeps the engine's weights in sync with the policy before each ``rollout_func`` call; each
    turn is one request per context. vLLM stops at the tokenizer's eos; it is appended when the
    engine leaves it out, so that every model turn ends the same way in the token stream.
    """

    eos_token_id: int

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[list[int]]:
        _prompts, completions, _logprobs, *_ = trainer.vllm_generation.generate(
            prompts=[list(c) for c in contexts], images=None, num_generations=1
        )
        return [list(c) if c and c[-1] == self.eos_token_id else [*c, self.eos_token_id] for c in completions]


@dataclass(slots=True)
class TrlRollout:
    """The ``rollout_func``: one environment episode per received prompt.

    ``examples`` maps each dataset prompt text to its example. Extra fields returned per completion
    (forwarded by TRL to the reward functions): ``reward_components`` (name -> value), ``num_turns``,
    ``k_star`` (0 when never correct), ``first_turn_f``, ``first_turn_match``, ``final_sql``.
    """

    examples: Mapping[str, Example]
    tokenizer: Any
    format: ConversationFormat
    generator: TokenGenerator
    env_config: EnvConfig = field(default_factory=EnvConfig)
    pool: ExecutionPool | None = None
    cache: GoldCache = field(default_factory=GoldCache)
    #: Every trajectory of the last call (for tests and run reports).
    last_trajectories: list[Trajectory] = field(default_factory=list)

    def _tokens(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _text(self, tokens: Sequence[int]) -> str:
        special = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        return str(self.tokenizer.decode([t for t in tokens if t not in special], skip_special_tokens=False))

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        if self.pool is None:
            self.pool = ExecutionPool(workers=1)
        unknown = [p for p in prompts if p not in self.examples]
        if unknown:
            raise ConfigError(f"rollout prompt not in the training examples: {unknown[0][:120]!r}")
        envs = [SQLRefineEnv(self.env_config, pool=self.pool, cache=self.cache) for _ in prompts]
        for env, prompt in zip(envs, prompts, strict=True):
            env.reset(self.examples[prompt])
        prompt_ids = [self._tokens(prompt) for prompt in prompts]
        completion_ids: list[list[int]] = [[] for _ in prompts]
        env_mask: list[list[int]] = [[] for _ in prompts]
        finals: list[Any] = [None] * len(prompts)
        active = list(range(len(prompts)))
        for _ in range(self.env_config.max_turns):
            if not active:
                break
            turns = self.generator([prompt_ids[i] + completion_ids[i] for i in active], trainer)
            if not completion_ids[active[0]] and not any(self._text(tokens).strip() for tokens in turns):
                raise ConfigError(
                    "the model produced no tokens for any prompt of this batch: check that the tokenizer's eos "
                    "and pad ids match the model and that max_new_tokens > 0"
                )
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
    breakdown = get_reward(reward).fn(Trajectory(()), RewardContext(""))
    return tuple(name for name, _ in breakdown.components)


def component_reward_funcs(reward: str) -> list[RewardFunc]:
    """One TRL reward function per component of ``reward``; their sum is the trajectory reward.

    Each is named after its component (TRL logs ``rewards/<name>/mean``) and reads the
    ``reward_components`` field the rollout function returned.
    """

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
