#!/usr/bin/env bash
# Progress-SQL with GRPO on verl 0.9.1: the paper's setting (see common.sh and docs/training.md).
#   TRAIN_FILES=... VAL_FILES=... bash recipes/verl/grpo.sh [extra hydra overrides]
set -euo pipefail
source "$(dirname "$0")/common.sh"
run_recipe \
  "actor_rollout_ref.actor.policy_loss.loss_mode=vanilla" \
  "actor_rollout_ref.actor.clip_ratio_low=0.2" \
  "actor_rollout_ref.actor.clip_ratio_high=0.2" \
  "actor_rollout_ref.actor.use_kl_loss=true" \
  "actor_rollout_ref.actor.kl_loss_coef=0.001" \
  "actor_rollout_ref.actor.kl_loss_type=low_var_kl" \
  "trainer.experiment_name=${EXPERIMENT:-grpo-progressive}" \
  "$@"
