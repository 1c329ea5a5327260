#!/usr/bin/env bash
# Progress-SQL on SkyRL 0.4.0 (FSDP backend, vLLM rollouts): the paper's setting, GRPO or GSPO.
#   TRAIN_DATA=... VAL_DATA=... ALGORITHM=grpo|gspo bash recipes/skyrl/train.sh [extra key=value overrides]
#
# Runs SkyRL's own main_base with trainer.override_entrypoint=progress_sql.integrations.skyrl_entrypoint,
# which registers the environment in the Ray task and reads its settings from
# environment.skyrl_gym.progress_sql.* (here: settings_file=recipes/skyrl/env.yaml). docs/training.md
# (SkyRL) explains each setting. Environment variables: MODEL, TRAIN_DATA, VAL_DATA (parquet files of
# `progress-sql export --format skyrl`), ALGORITHM, NNODES, GPUS_PER_NODE, PYTHON (a Python >= 3.12
# environment with installsets/skyrl-gpu.txt and progress-sql), SETTING (the trainer setting's name,
# default paper), PROFILE (the profile, progress_sql/profiles.py, default progress-sql: paper runs the
# paper's reward, ODT, preset and schema; docs/profiles.md), EXPERIMENT, CKPT_DIR, ENV_SETTINGS. PROGRESS_SQL_DRY_RUN=1 prints the command line,
# one argument per line, instead of starting.
#
# The trainer setting (G, temperature, T, KL, updates per batch, loss reduction, lengths, batch,
# learning rate, clip range) is named once, in progress_sql/integrations/trainer_setting.py, for the
# TRL, verl and SkyRL recipes alike (docs/training.md, "The paper setting across trainers": the
# paper's values and ours, and why). It comes out of that module as SkyRL overrides; GSPO then replaces
# its clip range and KL term. A whole trajectory stays within the paper's 8,192 tokens: SkyRL stops
# once the context exceeds generator.max_input_length (8,192 - 1,024) and a turn adds at most
# max_generate_length (1,024).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
PYTHON="${PYTHON:-python3}"
MODEL="${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}"
TRAIN_DATA="${TRAIN_DATA:-$HOME/data/progress-sql/skyrl/train.parquet}"
VAL_DATA="${VAL_DATA:-$HOME/data/progress-sql/skyrl/validation.parquet}"
ALGORITHM="${ALGORITHM:-grpo}"
NNODES="${NNODES:-1}"
GPUS_PER_NODE="${GPUS_PER_NODE:-8}"
EXPERIMENT="${EXPERIMENT:-progress-sql-$ALGORITHM}"
CKPT_DIR="${CKPT_DIR:-$HOME/ckpts/$EXPERIMENT}"
ENV_SETTINGS="${ENV_SETTINGS:-$here/env.yaml}"
PROFILE="${PROFILE:-progress-sql}"
"$PYTHON" -c 'import sys; from progress_sql.profiles import get_profile; get_profile(sys.argv[1])' "$PROFILE"
GPUS=$((NNODES * GPUS_PER_NODE))
# The trainer setting as SkyRL overrides, one per line (a failure stops the recipe: set -e).
SETTING_OVERRIDES="$("$PYTHON" -m progress_sql.integrations.trainer_setting skyrl "${SETTING:-paper}")"
mapfile -t setting <<< "$SETTING_OVERRIDES"

case "$ALGORITHM" in
  grpo) algorithm=(  # the setting's clip range and KL term
      "trainer.algorithm.policy_loss_type=regular") ;;
  gspo) algorithm=(  # sequence-level ratios, GSPO's clip range, no KL (as the verl GSPO recipe)
      "trainer.algorithm.policy_loss_type=gspo"
      "trainer.algorithm.eps_clip_low=3e-4"
      "trainer.algorithm.eps_clip_high=4e-4"
      "trainer.algorithm.use_kl_loss=false") ;;
  *) echo "ALGORITHM must be grpo or gspo, not $ALGORITHM" >&2; exit 2 ;;
esac

args=(
  -m skyrl.train.entrypoints.main_base
  "trainer.override_entrypoint=progress_sql.integrations.skyrl_entrypoint"
  "data.train_data=['$TRAIN_DATA']"
  "data.val_data=['$VAL_DATA']"
  "environment.env_class=progress_sql"
  "environment.skyrl_gym.progress_sql.settings_file=$ENV_SETTINGS"
  "environment.skyrl_gym.progress_sql.profile=$PROFILE"
  "environment.skyrl_gym.max_env_workers=32"        # stepping threads; the SQL pool gets as many workers
  "trainer.policy.model.path=$MODEL"
  "trainer.strategy=fsdp"
  "trainer.placement.colocate_all=true"
  "trainer.placement.policy_num_nodes=$NNODES"
  "trainer.placement.policy_num_gpus_per_node=$GPUS_PER_NODE"
  "trainer.placement.ref_num_nodes=$NNODES"
  "trainer.placement.ref_num_gpus_per_node=$GPUS_PER_NODE"
  "generator.inference_engine.num_engines=$GPUS"
  "generator.inference_engine.tensor_parallel_size=1"
  "generator.inference_engine.gpu_memory_utilization=0.6"
  "${setting[@]}"
  "${algorithm[@]}"
  "generator.use_conversation_multi_turn=true"
  "trainer.micro_train_batch_size_per_gpu=1"
  "trainer.micro_forward_batch_size_per_gpu=2"
  "trainer.epochs=1"
  "trainer.eval_interval=20"
  "trainer.eval_before_train=true"
  "trainer.ckpt_path=$CKPT_DIR"
  "trainer.ckpt_interval=50"
  "trainer.max_ckpts_to_keep=2"                     # a 7B FSDP checkpoint with optimizer state is ~80 GB
  "trainer.export_path=$CKPT_DIR/exports"
  "trainer.hf_save_interval=50"                     # Hugging Face folders for progress-sql eval
  "trainer.logger=['console','tensorboard']"
  "trainer.project_name=progress-sql"
  "trainer.run_name=$EXPERIMENT"
  "$@"
)
if [ "${PROGRESS_SQL_DRY_RUN:-0}" = 1 ]; then
  printf '%s\n' "$PYTHON" "${args[@]}"
  exit 0
fi
exec "$PYTHON" "${args[@]}"
