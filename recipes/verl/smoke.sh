#!/usr/bin/env bash
# The first run on a new machine: Progress-SQL with GRPO (grpo.sh) on ONE GPU with a 0.5B model, for a
# few steps, through the real trainer, vLLM and the agent loop, validation and a checkpoint included.
# Smaller batches and budgets than the trainer setting's, the same four updates per batch (8 prompts in
# mini-batches of 2) and KL term. Minutes, not hours; docs/training.md lists what a healthy run prints.
#   TRAIN_FILES=... VAL_FILES=... bash recipes/verl/smoke.sh [extra hydra overrides]
set -euo pipefail
export MODEL="${MODEL:-Qwen/Qwen2.5-Coder-0.5B-Instruct}"
export GPUS_PER_NODE="${GPUS_PER_NODE:-1}" NNODES="${NNODES:-1}"
export EXPERIMENT="${EXPERIMENT:-smoke}"
export KEEP_CHECKPOINTS="${KEEP_CHECKPOINTS:-1}"
export ROLLOUT_DATA_DIR="${ROLLOUT_DATA_DIR:-${CHECKPOINT_DIR:-$HOME/checkpoints/progress-sql}/smoke-rollouts}"
exec bash "$(dirname "$0")/grpo.sh" \
  "data.train_batch_size=8" \
  "data.max_prompt_length=2048" \
  "data.max_response_length=1024" \
  "data.val_max_samples=32" \
  "actor_rollout_ref.rollout.n=4" \
  "actor_rollout_ref.rollout.tensor_model_parallel_size=1" \
  "actor_rollout_ref.rollout.gpu_memory_utilization=0.4" \
  "actor_rollout_ref.rollout.agent.num_workers=2" \
  "actor_rollout_ref.actor.ppo_mini_batch_size=2" \
  "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4" \
  "reward.num_workers=2" \
  "trainer.total_training_steps=4" \
  "trainer.save_freq=4" \
  "trainer.test_freq=4" \
  "trainer.val_before_train=false" \
  "$@"
