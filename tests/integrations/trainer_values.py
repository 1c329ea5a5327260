"""What each trainer will run, read back from its composed configuration in the trainer setting's terms
(the fields of :class:`progress_sql.integrations.trainer_setting.TrainerSetting`, plus
``response_tokens``), each from the trainer's own semantics (file:line of the pinned packages).
None: the trainer has no such bound (:data:`NO_SUCH_BOUND`). No trainer is imported here: the verl
environment (tests/with_verl) and the main one (tests/integrations) both use it."""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf

#: The bounds a trainer does not have, and why. TRL 1.16's GRPOConfig has no prompt limit, so neither
#: the prompt nor the whole sequence is bounded (only the completion: ``max_completion_length``); verl's
#: agent loop gives a turn what is left of the response budget (integrations/verl/agent_loop.py
#: ``run``), no per-turn limit; SkyRL bounds the whole trajectory, not the response alone.
NO_SUCH_BOUND = {
    "trl": {"prompt_tokens", "sequence_tokens"},
    "verl": {"turn_tokens"},
    "skyrl": {"response_tokens"},
}
#: The fields a GSPO recipe sets its own way (no KL term, GSPO's clip range).
GSPO_OWN = {"kl_coef", "kl_placement", "kl_estimator", "clip_epsilon"}


def _clip(low: float, high: float) -> Any:
    return low if low == high else (low, high)


def _kl_placement(in_reward: bool, in_loss: bool) -> str | None:
    return "reward" if in_reward else "loss" if in_loss else None


def trl_values(grpo: Any, rl: Any, processes: int) -> dict[str, Any]:
    """``grpo`` a ``GRPOConfig`` that ``trainer_args(rl, ..., processes)`` built. trl 1.16.0: one generation
    every ``steps_per_generation`` x ``num_iterations`` passes, each pass the next slice of it
    (grpo_trainer.py:1538-1546), an optimizer step every ``gradient_accumulation_steps`` passes; the KL
    term is k3 (grpo_trainer.py:3100-3102) added to the per-token loss (3149-3150); ``loss_type`` grpo
    takes each sequence's token mean, then the mean (3153-3154); advantages over the group, scaled by its
    std with ``scale_rewards`` group."""
    assert grpo.steps_per_generation % grpo.gradient_accumulation_steps == 0
    generated = grpo.per_device_train_batch_size * processes * grpo.steps_per_generation  # sequences
    return {
        "samples_per_prompt": grpo.num_generations,
        "temperature": grpo.temperature,
        "turns": rl.env_config().max_turns,
        "advantage": "grpo" if grpo.scale_rewards == "group" else grpo.scale_rewards,
        "kl_coef": grpo.beta,
        "kl_placement": _kl_placement(False, grpo.beta > 0),
        "kl_estimator": "k3",
        "updates_per_batch": grpo.steps_per_generation // grpo.gradient_accumulation_steps * grpo.num_iterations,
        "loss_aggregation": {"grpo": "seq-mean-token-mean"}.get(grpo.loss_type, grpo.loss_type),
        "sequence_tokens": None,
        "prompt_tokens": None,
        "response_tokens": grpo.max_completion_length if grpo.max_completion_length == rl.completion_tokens else None,
        "turn_tokens": rl.max_new_tokens,
        "prompts_per_batch": generated // grpo.num_generations,
        "learning_rate": grpo.learning_rate,
        # the upper bound is epsilon unless epsilon_high is given (grpo_trainer.py:946)
        "clip_epsilon": _clip(grpo.epsilon, grpo.epsilon if grpo.epsilon_high is None else grpo.epsilon_high),
    }


def verl_values(cfg: Any) -> dict[str, Any]:
    """``cfg`` verl 0.9.1's ``ppo_trainer`` config (composed, or as the recipe's overrides give it). A
    rollout batch is ``data.train_batch_size`` prompts, updated in mini-batches of ``ppo_mini_batch_size``
    prompts x ``rollout.n`` for ``ppo_epochs`` (verl/trainer/ppo/v1/trainer_base.py:1829-1855); the KL
    loss uses ``kl_loss_type`` (low_var_kl is k3, core_algos.py:2239-2245); T is the agent loop's."""
    actor, rollout, data = cfg.actor_rollout_ref.actor, cfg.actor_rollout_ref.rollout, cfg.data
    assert data.train_batch_size % actor.ppo_mini_batch_size == 0
    [loop] = OmegaConf.load(rollout.agent.agent_loop_config_path)
    return {
        "samples_per_prompt": rollout.n,
        "temperature": rollout.temperature,
        "turns": loop.max_turns,
        "advantage": cfg.algorithm.adv_estimator if cfg.algorithm.norm_adv_by_std_in_grpo else "grpo without std",
        "kl_coef": actor.kl_loss_coef if actor.use_kl_loss else 0.0,
        "kl_placement": _kl_placement(cfg.algorithm.use_kl_in_reward, actor.use_kl_loss),
        "kl_estimator": {"low_var_kl": "k3"}.get(actor.kl_loss_type, actor.kl_loss_type),
        "updates_per_batch": data.train_batch_size // actor.ppo_mini_batch_size * actor.ppo_epochs,
        "loss_aggregation": actor.loss_agg_mode,
        "sequence_tokens": data.max_prompt_length + data.max_response_length,
        "prompt_tokens": data.max_prompt_length,
        "response_tokens": data.max_response_length,
        "turn_tokens": None,
        "prompts_per_batch": data.train_batch_size,
        "learning_rate": actor.optim.lr,
        "clip_epsilon": _clip(actor.clip_ratio_low, actor.clip_ratio_high),
    }


def skyrl_values(cfg: Any) -> dict[str, Any]:
    """``cfg`` SkyRL 0.4.0's config as its command line gives it. Each mini-batch of
    ``policy_mini_batch_size`` prompts is one optimizer step, ``update_epochs_per_batch`` passes
    (skyrl/train/config/config.py:1509-1523); the generator stops once the context exceeds
    ``max_input_length`` and a turn adds at most ``max_generate_length`` (skyrl_gym_generator.py:458-462, 985),
    so their sum bounds a trajectory; prompts longer than ``max_prompt_length`` are filtered out
    (skyrl/train/dataset/dataset.py:72-81)."""
    trainer, algorithm, generator = cfg.trainer, cfg.trainer.algorithm, cfg.generator
    assert trainer.train_batch_size % trainer.policy_mini_batch_size == 0
    aggregation = {"sequence_mean": "seq-mean-token-mean", "token_mean": "token-mean"}
    updates = trainer.train_batch_size // trainer.policy_mini_batch_size * trainer.update_epochs_per_batch
    return {
        "samples_per_prompt": generator.n_samples_per_prompt,
        "temperature": generator.sampling_params.temperature,
        "turns": generator.max_turns,
        "advantage": algorithm.advantage_estimator if algorithm.grpo_norm_by_std else "grpo without std",
        "kl_coef": algorithm.kl_loss_coef if algorithm.use_kl_loss else 0.0,
        "kl_placement": _kl_placement(algorithm.use_kl_in_reward, algorithm.use_kl_loss),
        "kl_estimator": algorithm.kl_estimator_type,
        "updates_per_batch": updates,
        "loss_aggregation": aggregation.get(algorithm.loss_reduction, algorithm.loss_reduction),
        "sequence_tokens": generator.max_input_length + generator.sampling_params.max_generate_length,
        "prompt_tokens": trainer.max_prompt_length,
        "response_tokens": None,
        "turn_tokens": generator.sampling_params.max_generate_length,
        "prompts_per_batch": trainer.train_batch_size,
        "learning_rate": trainer.policy.optimizer_config.lr,
        "clip_epsilon": _clip(algorithm.eps_clip_low, algorithm.eps_clip_high),
    }


def setting_values(setting: Any) -> dict[str, Any]:
    """The setting's own values in the same terms."""
    return {name: item.value for name, item in setting.sourced().items()} | {"response_tokens": setting.response_tokens}


def disagreements(setting: Any, trainer: str, values: dict[str, Any], skip: set[str] = frozenset()) -> dict[str, Any]:
    """``{field: (setting's value, trainer's)}`` for every field where they differ; a bound the trainer
    does not have (:data:`NO_SUCH_BOUND`) must read None, and only those may."""
    want = setting_values(setting)
    assert set(values) == set(want), set(values) ^ set(want)
    differ: dict[str, Any] = {}
    for name, value in values.items():
        expected = None if name in NO_SUCH_BOUND[trainer] else want[name]
        if name not in skip and value != expected:
            differ[name] = (expected, value)
    return differ
