#!/usr/bin/env bash
# Progress-SQL on SkyRL 0.4.0 (FSDP backend, vLLM rollouts): the paper's setting, GRPO or GSPO.
#   TRAIN_DATA=... VAL_DATA=... ALGORITHM=grpo|gspo bash recipes/skyrl/train.sh [extra key=value overrides]
#
# Runs SkyRL's own main_base with trainer.override_entrypoint=progress_sql.integrations.skyrl_entrypoint,
# which registers the environment in the Ray task and reads its settings from
# environment.skyrl_gym.progress_sql.* (here: settings_file=recipes/skyrl/env.yaml). docs/training.md
# (SkyRL) explains each setting. Environment variables: MODEL, TRAIN_DATA, VAL_DATA (parquet files of
# `progress-sql export --format skyrl`), ALGORITHM, NNODES, GPUS_PER_NODE, PYTHON (a Python >= 3.12
# environment with installsets/skyrl-gpu.txt and progress-sql), EXPERIMENT, CKPT_DIR, ENV_SETTINGS.
# PROGRESS_SQL_DRY_RUN=1 prints the command line, one argument per line, instead of starting.
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
GPUS=$((NNODES * GPUS_PER_NODE))

case "$ALGORITHM" in
  grpo) algorithm=(
      "trainer.algorithm.policy_loss_type=regular"
      "trainer.algorithm.eps_clip_low=0.2"
      "trainer.algorithm.eps_clip_high=0.2"
      "trainer.algorithm.use_kl_loss=true"
      "trainer.algorithm.kl_loss_coef=0.001") ;;
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
  "trainer.algorithm.advantage_estimator=grpo"
  "trainer.algorithm.loss_reduction=sequence_mean"  # the paper's per-sequence mean (SkyRL's default: token_mean)
  "${algorithm[@]}"
  "generator.n_samples_per_prompt=8"                # the paper's G
  "generator.sampling_params.temperature=1.0"       # the paper's
  "generator.max_turns=4"                           # the paper's T (SkyRL's default is 1)
  "generator.use_conversation_multi_turn=true"
  "trainer.max_prompt_length=4096"                  # ours: full schemas of BIRD databases
  "generator.sampling_params.max_generate_length=1024"  # ours: one answer
  "generator.max_input_length=9216"                 # prompt + 4 answers + 3 feedback turns; default = max_prompt_length cuts turns
  "trainer.train_batch_size=64"                     # ours: prompts per step (x 8 samples)
  "trainer.policy_mini_batch_size=16"
  "trainer.micro_train_batch_size_per_gpu=1"
  "trainer.micro_forward_batch_size_per_gpu=2"
  "trainer.policy.optimizer_config.lr=1e-6"         # ours (TRL's and verl's recipes agree)
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
