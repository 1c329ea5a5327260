# Shared settings of the Progress-SQL verl 0.9.1 recipes (sourced by grpo.sh and gspo.sh).
#
# The trainer setting (G, temperature, KL, updates per batch, loss aggregation, lengths, batch, learning
# rate, clip range) is named once, in progress_sql/integrations/trainer_setting.py, for the TRL, verl
# and SkyRL recipes alike: the paper's values where it states them (G = 8, temperature 1.0, T = 4, each
# sequence's token mean then the mean over sequences, 8,192 tokens), ours elsewhere (docs/training.md,
# "The paper setting across trainers", says which and why). It comes out of that module as verl
# overrides; PROGRESS_SQL_DRY_RUN=1 shows them. T is max_turns in agent_loops.yaml. Also the paper's:
# Qwen2.5-Coder-7B-Instruct, 8 GPUs.
#
# Environment variables: MODEL, TRAIN_FILES, VAL_FILES (parquet files of verl_row rows), NNODES,
# GPUS_PER_NODE, PYTHON (the verl environment's python, with progress-sql importable), SETTING (the
# trainer setting's name, default paper), PROFILE (the profile, progress_sql/profiles.py, default
# progress-sql: paper runs the paper's reward, ODT, preset and schema; the agent loop and the reward
# both read it from reward_kwargs.profile, docs/profiles.md), EXPERIMENT, CHECKPOINT_DIR (checkpoints go to
# CHECKPOINT_DIR/<experiment>; made absolute, default $HOME/checkpoints/progress-sql), KEEP_CHECKPOINTS
# (actor checkpoints kept, default 2: a 7B FSDP checkpoint with optimizer state is about 80 GB),
# ROLLOUT_DATA_DIR (when set, every training step's
# trajectories are dumped there as <step>.jsonl), LOGGER (verl's trainer.logger, default [console]).
# PROGRESS_SQL_DRY_RUN=1 prints the overrides, one per line, instead of starting training.
#
# Training starts from progress_sql.integrations.verl.main: verl's main_ppo with the v1 trainer
# progress_sql_sync (PPOTrainerSync plus the progress_sql/* step metrics, docs/training.md).

PYTHON="${PYTHON:-python3}"
MODEL="${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}"
TRAIN_FILES="${TRAIN_FILES:-$HOME/data/progress-sql/verl/train.parquet}"
VAL_FILES="${VAL_FILES:-$HOME/data/progress-sql/verl/validation.parquet}"
NNODES="${NNODES:-1}"
GPUS_PER_NODE="${GPUS_PER_NODE:-8}"
CHECKPOINT_DIR="$(realpath -m "${CHECKPOINT_DIR:-$HOME/checkpoints/progress-sql}")"
KEEP_CHECKPOINTS="${KEEP_CHECKPOINTS:-2}"
LOGGER="${LOGGER:-[console]}"

# Where the installed package keeps the agent-loop registry and the reward function.
AGENT_LOOPS="$("$PYTHON" -c 'import progress_sql.integrations.verl as v; print(v.AGENT_LOOPS_YAML)')"
REWARD_FILE="$("$PYTHON" -c 'import progress_sql.integrations.verl.reward as r; print(r.__file__)')"
# The trainer setting as verl overrides, one per line (a failure stops the recipe: set -e).
SETTING_OVERRIDES="$("$PYTHON" -m progress_sql.integrations.trainer_setting verl "${SETTING:-paper}")"
PROFILE="${PROFILE:-progress-sql}"
"$PYTHON" -c 'import sys; from progress_sql.profiles import get_profile; get_profile(sys.argv[1])' "$PROFILE"
mapfile -t setting_overrides <<< "$SETTING_OVERRIDES"

common_overrides=(
  "${setting_overrides[@]}"
  "data.train_files=$TRAIN_FILES"
  "data.val_files=$VAL_FILES"
  "data.filter_overlong_prompts=true"
  "data.truncation=error"
  "actor_rollout_ref.model.path=$MODEL"
  "actor_rollout_ref.model.use_remove_padding=true"
  "actor_rollout_ref.model.enable_gradient_checkpointing=true"
  "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2"
  "actor_rollout_ref.actor.entropy_coeff=0"
  "actor_rollout_ref.rollout.name=vllm"
  "actor_rollout_ref.rollout.mode=async"
  "actor_rollout_ref.rollout.tensor_model_parallel_size=2"
  "actor_rollout_ref.rollout.gpu_memory_utilization=0.6"
  "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4"
  "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"
  # Rows carry agent_name=progress_sql_agent; the registry maps it to ProgressSQLAgentLoop (T = 4).
  "actor_rollout_ref.rollout.agent.agent_loop_config_path=$AGENT_LOOPS"
  # verl 0.9.1 reads the reward function from reward.custom_reward_function.* (a top-level
  # custom_reward_function.* is legacy and silently ignored by main_ppo).
  "reward.custom_reward_function.path=$REWARD_FILE"
  "reward.custom_reward_function.name=compute_score"
  # The profile's reward and weights (gamma = 0.5), read by compute_score and by the agent loop alike.
  "+reward.custom_reward_function.reward_kwargs.profile=$PROFILE"
  "reward.reward_manager.name=naive"
  "reward.num_workers=8"
  "trainer.n_gpus_per_node=$GPUS_PER_NODE"
  "trainer.nnodes=$NNODES"
  "trainer.project_name=progress-sql"
  "trainer.logger=$LOGGER"
  "trainer.total_epochs=1"                 # ours
  "trainer.save_freq=50"
  "trainer.test_freq=25"
  "trainer.val_before_train=true"
  # Absolute, so every node and a resumed run (trainer.resume_mode=auto) find the same folder.
  "trainer.default_local_dir=$CHECKPOINT_DIR/\${trainer.experiment_name}"
  "trainer.max_actor_ckpt_to_keep=$KEEP_CHECKPOINTS"
  # The v1 trainer with the Progress-SQL step metrics (registered by progress_sql.integrations.verl.main).
  "trainer.v1.trainer_mode=progress_sql_sync"
)
if [ -n "${ROLLOUT_DATA_DIR:-}" ]; then
  common_overrides+=("trainer.rollout_data_dir=$(realpath -m "$ROLLOUT_DATA_DIR")")
fi

# run_recipe OVERRIDE...: start verl's trainer with the common and the given overrides (extra
# command-line arguments of the recipe come last and win).
run_recipe() {
  local all=("${common_overrides[@]}" "$@")
  if [ -n "${PROGRESS_SQL_DRY_RUN:-}" ]; then
    printf '%s\n' "${all[@]}"
    return 0
  fi
  exec "$PYTHON" -m progress_sql.integrations.verl.main "${all[@]}"
}
