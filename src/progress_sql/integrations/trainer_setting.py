"""The trainer setting, named once, that the TRL, verl and SkyRL recipes read: G, temperature, T, the
KL term, optimizer updates per rollout batch, loss aggregation, the sequence budget, batch, learning rate
and clip range. Each value says whether it is the paper's (Section 5.1, Appendix B and the GRPO
formulation of its appendix) or ours, and why.

verl's and SkyRL's recipes print the setting as their command-line overrides (``python -m
progress_sql.integrations.trainer_setting verl|skyrl [NAME]``: one per line); TRL reads it through
``progress-sql train``'s real-model defaults (``training/recipe.py``). ``... table`` prints the table of
docs/training.md ("The paper setting across trainers"). This module imports no trainer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from progress_sql.errors import ConfigError
from progress_sql.registry import lookup
from progress_sql.sourced import Sourced, ours, paper, sourced_fields

#: Loss aggregations by our name: TRL ``loss_type``, verl ``loss_agg_mode``, SkyRL ``loss_reduction``.
AGGREGATIONS = {"seq-mean-token-mean": {"trl": "grpo", "verl": "seq-mean-token-mean", "skyrl": "sequence_mean"}}
#: KL estimators (Schulman's k1/k2/k3): TRL computes k3 only, verl ``kl_loss_type``, SkyRL ``kl_estimator_type``.
KL_ESTIMATORS = {"k3": {"trl": "k3", "verl": "low_var_kl", "skyrl": "k3"}}


@dataclass(frozen=True, slots=True)
class TrainerSetting:
    """One RL setting every trainer runs the same way (``paper``: :data:`PAPER`)."""

    name: str
    samples_per_prompt: Sourced[int]
    temperature: Sourced[float]
    turns: Sourced[int]
    #: ``grpo``: each sample's reward minus its group's mean, over the group's standard deviation.
    advantage: Sourced[str]
    kl_coef: Sourced[float]
    #: ``loss``: beta x D_KL(pi_theta || pi_ref) is a term of the policy loss (not taken off the reward).
    kl_placement: Sourced[str]
    kl_estimator: Sourced[str]
    #: Optimizer updates per rollout batch: the batch is cut into that many mini-batches, each sample used once.
    updates_per_batch: Sourced[int]
    loss_aggregation: Sourced[str]
    #: The prompt and the whole multi-turn completion (answers and feedback turns) together.
    sequence_tokens: Sourced[int]
    prompt_tokens: Sourced[int]
    turn_tokens: Sourced[int]
    #: Prompts per rollout batch, all GPUs together (each sampled ``samples_per_prompt`` times).
    prompts_per_batch: Sourced[int]
    learning_rate: Sourced[float]
    clip_epsilon: Sourced[float]

    def __post_init__(self) -> None:
        if self.prompts_per_batch.value % self.updates_per_batch.value:
            raise ConfigError(f"setting {self.name}: {self.prompts_per_batch.value} prompts per batch do not split "
                              f"into {self.updates_per_batch.value} updates")  # fmt: skip
        prompt, sequence, turn = self.prompt_tokens.value, self.sequence_tokens.value, self.turn_tokens.value
        if not 0 < prompt < sequence or not 0 < turn <= self.response_tokens:
            raise ConfigError(f"setting {self.name}: token budgets need prompt < sequence and turn <= response")
        if self.kl_placement.value != "loss" or self.advantage.value != "grpo":
            raise ConfigError(f"setting {self.name}: the trainers are mapped for a GRPO advantage and a KL loss term")
        lookup(AGGREGATIONS, self.loss_aggregation.value, "loss aggregation")
        lookup(KL_ESTIMATORS, self.kl_estimator.value, "KL estimator")

    @property
    def response_tokens(self) -> int:
        """The whole completion's budget: the sequence's less the prompt's."""
        return self.sequence_tokens.value - self.prompt_tokens.value

    @property
    def mini_batch_prompts(self) -> int:
        """Prompts per optimizer update."""
        return self.prompts_per_batch.value // self.updates_per_batch.value

    def sourced(self) -> dict[str, Sourced[Any]]:
        """Every sourced field by name, in declaration order."""
        return sourced_fields(self)


PAPER = TrainerSetting(
    name="paper",
    samples_per_prompt=paper(8, "G = 8 (Section 5.1, Appendix B)"),
    temperature=paper(1.0, "Section 5.1, Appendix B"),
    turns=paper(4, "T = 4 (Section 5.1, Appendix B)"),
    advantage=paper("grpo", "GRPO (Section 5.1; Appendix, GRPO Formulation)"),
    kl_coef=ours(
        0.001,
        "the objective has a beta D_KL term (Section 3) but no beta is given; 0.001 is DeepSeek-R1's, "
        "and verl's and SkyRL's default",
    ),
    kl_placement=ours("loss", "Section 3 puts -beta D_KL in the objective; a loss term, as in GRPO (Shao et al.)"),
    kl_estimator=ours("k3", "the paper names D_KL only; k3 is GRPO's estimator and the one TRL computes"),
    updates_per_batch=ours(4, "not given; four mini-batches of a quarter of the rollout batch, each sample used once"),
    loss_aggregation=paper(
        "seq-mean-token-mean",
        "each sequence's token mean, then the mean over the G samples "
        "(Appendix, GRPO Formulation: 1/G sum over i of 1/len(y_i) sum over t)",
    ),
    sequence_tokens=paper(8192, "maximum sequence length (Appendix B): the prompt and every turn after it"),
    prompt_tokens=ours(4096, "the split of the 8,192 is not given; half for prompts with full BIRD schemas"),
    turn_tokens=ours(1024, "not given; one answer"),
    prompts_per_batch=ours(64, "Table 4's batch size is not in our copy of the paper"),
    learning_rate=ours(1e-6, "Table 4's is not in our copy of the paper; TRL's GRPOConfig default"),
    clip_epsilon=ours(0.2, "the GRPO formulation has epsilon but no value; GRPO's and PPO's standard"),
)

#: Named settings; ``paper`` is the one the recipes run.
SETTINGS: dict[str, TrainerSetting] = {"paper": PAPER}


def trainer_setting(name: str) -> TrainerSetting:
    return lookup(SETTINGS, name, "trainer setting")


def _text(value: object) -> str:
    """A value as hydra and OmegaConf read it back (``true``, ``1e-06``, ``0.2``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def verl_overrides(setting: TrainerSetting) -> list[str]:
    """verl 0.9.1's hydra overrides (``ppo_trainer.yaml`` keys) for ``setting``. T is the agent loop's
    ``max_turns`` (``integrations/verl/agent_loops.yaml``); a turn gets what is left of the response budget."""
    actor, rollout = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
    values: dict[str, object] = {
        "algorithm.adv_estimator": setting.advantage.value,
        "algorithm.norm_adv_by_std_in_grpo": True,
        "algorithm.use_kl_in_reward": False,
        "data.train_batch_size": setting.prompts_per_batch.value,
        "data.max_prompt_length": setting.prompt_tokens.value,
        "data.max_response_length": setting.response_tokens,
        f"{actor}.optim.lr": setting.learning_rate.value,
        f"{actor}.ppo_mini_batch_size": setting.mini_batch_prompts,  # in prompts: x rollout.n sequences
        f"{actor}.ppo_epochs": 1,
        f"{actor}.loss_agg_mode": AGGREGATIONS[setting.loss_aggregation.value]["verl"],
        f"{actor}.use_kl_loss": True,
        f"{actor}.kl_loss_coef": setting.kl_coef.value,
        f"{actor}.kl_loss_type": KL_ESTIMATORS[setting.kl_estimator.value]["verl"],
        f"{actor}.clip_ratio_low": setting.clip_epsilon.value,
        f"{actor}.clip_ratio_high": setting.clip_epsilon.value,
        f"{rollout}.n": setting.samples_per_prompt.value,
        f"{rollout}.temperature": setting.temperature.value,
    }
    return [f"{key}={_text(value)}" for key, value in values.items()]


def skyrl_overrides(setting: TrainerSetting) -> list[str]:
    """SkyRL 0.4.0's command-line overrides for ``setting``. SkyRL stops a trajectory once its context
    exceeds ``generator.max_input_length`` and then generates at most ``max_generate_length`` more
    (``skyrl_gym_generator.py:459-462``), so input + one turn is the sequence budget."""
    algorithm = "trainer.algorithm"
    values: dict[str, object] = {
        f"{algorithm}.advantage_estimator": setting.advantage.value,
        f"{algorithm}.grpo_norm_by_std": True,
        f"{algorithm}.use_kl_in_reward": False,
        f"{algorithm}.use_kl_loss": True,
        f"{algorithm}.kl_loss_coef": setting.kl_coef.value,
        f"{algorithm}.kl_estimator_type": KL_ESTIMATORS[setting.kl_estimator.value]["skyrl"],
        f"{algorithm}.loss_reduction": AGGREGATIONS[setting.loss_aggregation.value]["skyrl"],
        f"{algorithm}.eps_clip_low": setting.clip_epsilon.value,
        f"{algorithm}.eps_clip_high": setting.clip_epsilon.value,
        "trainer.train_batch_size": setting.prompts_per_batch.value,
        "trainer.policy_mini_batch_size": setting.mini_batch_prompts,  # in prompts; one optimizer step each
        "trainer.update_epochs_per_batch": 1,
        "trainer.policy.optimizer_config.lr": setting.learning_rate.value,
        "trainer.max_prompt_length": setting.prompt_tokens.value,
        "generator.n_samples_per_prompt": setting.samples_per_prompt.value,
        "generator.sampling_params.temperature": setting.temperature.value,
        "generator.max_turns": setting.turns.value,
        "generator.sampling_params.max_generate_length": setting.turn_tokens.value,
        "generator.max_input_length": setting.sequence_tokens.value - setting.turn_tokens.value,
    }
    return [f"{key}={_text(value)}" for key, value in values.items()]


#: Each field's label and its option in TRL (``GRPOConfig`` or ``progress-sql train``), verl 0.9.1 and SkyRL 0.4.0.
OPTIONS: dict[str, tuple[str, str, str, str]] = {
    "samples_per_prompt": ("samples per prompt G", "`num_generations` (`--generations`)",
                           "`actor_rollout_ref.rollout.n`", "`generator.n_samples_per_prompt`"),
    "temperature": ("temperature", "`temperature`", "`actor_rollout_ref.rollout.temperature`",
                    "`generator.sampling_params.temperature`"),
    "turns": ("turns T", "`--turns`", "`max_turns` in `agent_loops.yaml`", "`generator.max_turns`"),
    "advantage": ("advantage", "`scale_rewards` `group` (TRL's default)",
                  "`algorithm.adv_estimator`, `norm_adv_by_std_in_grpo`",
                  "`trainer.algorithm.advantage_estimator`, `grpo_norm_by_std`"),
    "kl_coef": ("KL coefficient beta", "`beta`", "`actor_rollout_ref.actor.kl_loss_coef`",
                "`trainer.algorithm.kl_loss_coef`"),
    "kl_placement": ("KL placement", "always in the loss",
                     "`actor.use_kl_loss` true, `algorithm.use_kl_in_reward` false",
                     "`use_kl_loss` true, `use_kl_in_reward` false"),
    "kl_estimator": ("KL estimator", "k3, the only one", "`actor.kl_loss_type` `low_var_kl` (k3 clamped to [-10, 10])",
                     "`trainer.algorithm.kl_estimator_type`"),
    "updates_per_batch": ("optimizer updates per rollout batch",
                          "`steps_per_generation` = updates x `gradient_accumulation_steps`, `num_iterations` 1",
                          "`data.train_batch_size` / `actor.ppo_mini_batch_size`, `ppo_epochs` 1",
                          "`trainer.train_batch_size` / `policy_mini_batch_size`, `update_epochs_per_batch` 1"),
    "loss_aggregation": ("loss aggregation", "`loss_type` `grpo`", "`actor.loss_agg_mode` `seq-mean-token-mean`",
                         "`trainer.algorithm.loss_reduction` `sequence_mean`"),
    "sequence_tokens": ("sequence budget (tokens)",
                        "the prompt (not limited) + `max_completion_length` (`--max-completion-tokens`)",
                        "`data.max_prompt_length` + `data.max_response_length`",
                        "`generator.max_input_length` + `generator.sampling_params.max_generate_length`"),
    "prompt_tokens": ("prompt budget", "none: TRL 1.16 has no prompt limit", "`data.max_prompt_length`",
                      "`trainer.max_prompt_length`"),
    "turn_tokens": ("turn budget", "`--max-turn-tokens`", "none: a turn gets what is left of the response budget",
                    "`generator.sampling_params.max_generate_length`"),
    "prompts_per_batch": ("prompts per rollout batch", "`--prompts-per-step` (prompts per update) x updates",
                          "`data.train_batch_size`", "`trainer.train_batch_size`"),
    "learning_rate": ("learning rate", "`learning_rate` (`--lr`)", "`actor_rollout_ref.actor.optim.lr`",
                      "`trainer.policy.optimizer_config.lr`"),
    "clip_epsilon": ("clip epsilon", "`epsilon` (TRL's default 0.2)", "`actor.clip_ratio_low`, `clip_ratio_high`",
                     "`trainer.algorithm.eps_clip_low`, `eps_clip_high`"),
}  # fmt: skip


def _shown(value: object) -> str:
    """A value as the docs write it (``1e-6``, not ``1e-06``)."""
    return repr(value).replace("e-0", "e-") if isinstance(value, float) else str(value)


def markdown_table(setting: TrainerSetting) -> str:
    """docs/training.md's table of ``setting``: each field, its value, whose and why, each trainer's option."""
    lines = ["| field | value | source | TRL | verl | SkyRL |", "|---|---|---|---|---|---|"]
    for name, item in setting.sourced().items():
        label, trl, verl, skyrl = OPTIONS[name]
        lines.append(f"| {label} | {_shown(item.value)} | {item.source}: {item.why} | {trl} | {verl} | {skyrl} |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    """``verl|skyrl|table [NAME]``: the setting as a trainer's overrides (one per line), or as the docs' table."""
    outputs: dict[str, Callable[[TrainerSetting], list[str]]] = {
        "verl": verl_overrides,
        "skyrl": skyrl_overrides,
        "table": lambda setting: [markdown_table(setting)],
    }
    if len(argv) not in (1, 2) or argv[0] not in outputs:
        print(f"usage: python -m progress_sql.integrations.trainer_setting {'|'.join(outputs)} [NAME]", file=sys.stderr)
        return 2
    try:
        setting = trainer_setting(argv[1] if len(argv) == 2 else "paper")
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("\n".join(outputs[argv[0]](setting)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
