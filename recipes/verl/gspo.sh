#!/usr/bin/env bash
# Progress-SQL with GSPO on verl 0.9.1: sequence-level importance ratios (Zheng et al., 2025) with
# the clip range of verl's GSPO example and no KL term (these replace the trainer setting's); everything
# else as in grpo.sh (see common.sh).
#   TRAIN_FILES=... VAL_FILES=... bash recipes/verl/gspo.sh [extra hydra overrides]
set -euo pipefail
source "$(dirname "$0")/common.sh"
run_recipe \
  "actor_rollout_ref.actor.policy_loss.loss_mode=gspo" \
  "actor_rollout_ref.actor.clip_ratio_low=3e-4" \
  "actor_rollout_ref.actor.clip_ratio_high=4e-4" \
  "actor_rollout_ref.actor.clip_ratio_c=10.0" \
  "actor_rollout_ref.actor.use_kl_loss=false" \
  "trainer.experiment_name=${EXPERIMENT:-gspo-progressive}" \
  "$@"
