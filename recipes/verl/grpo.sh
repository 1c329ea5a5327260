#!/usr/bin/env bash
# Progress-SQL with GRPO on verl 0.9.1: the paper's setting (see common.sh and docs/training.md); its KL
# term, clip range and updates per batch come from the trainer setting (common.sh).
#   TRAIN_FILES=... VAL_FILES=... bash recipes/verl/grpo.sh [extra hydra overrides]
set -euo pipefail
source "$(dirname "$0")/common.sh"
run_recipe \
  "actor_rollout_ref.actor.policy_loss.loss_mode=vanilla" \
  "trainer.experiment_name=${EXPERIMENT:-grpo-progressive}" \
  "$@"
