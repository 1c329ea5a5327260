#!/usr/bin/env bash
# Progress-SQL on SkyRL 0.4.0, one-GPU smoke run: recipes/skyrl/train.sh (same entry point, same
# environment settings file, colocated) on one GPU with a small model, a few steps and small batches.
# It checks that the whole loop (vLLM rollouts, the environment, FSDP updates, one evaluation, the
# final Hugging Face save) runs, not that the model learns. It keeps the trainer setting's four updates
# per batch (4 prompts in mini-batches of 1) and KL term.
#   TRAIN_DATA=... VAL_DATA=... bash recipes/skyrl/smoke.sh [extra key=value overrides]
#
# Data: Spider TRAIN only (export refuses spider-dev and every other evaluation task's databases:
# the leakage guard, exit 2), validated on a schema-disjoint split of it. SPIDER is the folder with
# train_spider.json and database/ (its dev.json beside them is what the guard checks against):
#   SPLIT="$PWD/runs/spider-split"   # absolute: export reads --questions relative to --data-dir
#   progress-sql split --task spider-train --data-dir "$SPIDER" --fractions train=0.9,validation=0.1 \
#       --seed 0 --out "$SPLIT"
#   progress-sql export --format skyrl --task spider-train --data-dir "$SPIDER" \
#       --questions "$SPLIT/train.spider-train.json" --out data/skyrl/smoke/train.parquet
#   progress-sql export --format skyrl --task spider-train --data-dir "$SPIDER" \
#       --questions "$SPLIT/validation.spider-train.json" --out data/skyrl/smoke/validation.parquet
# Each export writes <name>.manifest.json beside the parquet; its source.leakage.decision is "clean".
#
# Environment variables: MODEL (default Qwen/Qwen2.5-0.5B-Instruct), STEPS (training steps, default 4),
# TRAIN_DATA, VAL_DATA (default data/skyrl/smoke/{train,validation}.parquet), and PYTHON, ALGORITHM,
# EXPERIMENT, CKPT_DIR, ENV_SETTINGS as train.sh reads them. Later overrides win (SkyRL parses the
# command line with OmegaConf.from_cli), so these replace train.sh's values and the arguments given
# here replace both. PROGRESS_SQL_DRY_RUN=1 prints the command line, one argument per line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
STEPS="${STEPS:-4}"
export MODEL="${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}"
export TRAIN_DATA="${TRAIN_DATA:-$PWD/data/skyrl/smoke/train.parquet}"
export VAL_DATA="${VAL_DATA:-$PWD/data/skyrl/smoke/validation.parquet}"
export EXPERIMENT="${EXPERIMENT:-progress-sql-smoke}"
export NNODES=1 GPUS_PER_NODE=1   # one engine, and policy and reference on the same GPU (colocate_all)

exec bash "$here/train.sh" \
  "trainer.max_training_steps=$STEPS" \
  "trainer.train_batch_size=4" \
  "trainer.policy_mini_batch_size=1" \
  "generator.n_samples_per_prompt=4" \
  "generator.sampling_params.max_generate_length=512" \
  "environment.skyrl_gym.max_env_workers=8" \
  "trainer.eval_before_train=false" \
  "trainer.eval_interval=$STEPS" \
  "trainer.eval_batch_size=64" \
  "trainer.ckpt_interval=-1" \
  "trainer.hf_save_interval=$STEPS" \
  "trainer.logger=['console']" \
  "$@"
