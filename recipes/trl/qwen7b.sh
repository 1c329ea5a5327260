#!/usr/bin/env bash
# The paper's setting through TRL on 8 GPUs of one machine: Qwen2.5-Coder-7B-Instruct, GRPO, G = 8,
# temperature 1.0, T = 4, lr 1e-6, KL 0.001, 4 updates per rollout batch of 64 prompts (the real-model
# defaults of `progress-sql train`: the trainer setting verl's and SkyRL's recipes share), every weight trained
# under DeepSpeed ZeRO-3 (zero3.yaml; fsdp.yaml with ACCELERATE_CONFIG=fsdp.yaml; multi_gpu.yaml only with
# --lora), rollouts by a vLLM engine colocated on each GPU, logs to TensorBoard (OUT/rl/checkpoints/runs).
#
# Environment: MODEL, TASK (default spider-train: Spider's training questions), DATA_DIR, OUT, ACCELERATE_CONFIG
# (a file of recipes/trl/, default zero3.yaml). Extra arguments go to `progress-sql train` and win.
# PROGRESS_SQL_DRY_RUN=1 prints the command instead of running it.
#
# What a healthy run shows (expected shapes, not measured figures): one progress bar per process, 400 RL
# steps (optimizer updates of 16 prompts x 8 samples; 100 rollout batches of 64 prompts); OUT/rl/metrics.jsonl
# with one row per step (as in smoke.sh); checkpoints every 200 steps, the last 2 kept; OUT/rl/final/ as one
# Hugging Face folder. With several
# processes held-out EX is not measured inside the run: `progress-sql eval` on OUT/rl/final does it
# (docs/training.md, "TRL on GPUs").
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODEL="${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}"
DATA_DIR="${DATA_DIR:-$HOME/data/spider}"
TASK="${TASK:-spider-train}"
OUT="${OUT:-runs/trl-qwen7b}"
ACCELERATE_CONFIG="${ACCELERATE_CONFIG:-zero3.yaml}"

command=(
  accelerate launch --config_file "$HERE/$ACCELERATE_CONFIG" "$(command -v progress-sql || echo progress-sql)"
  train --model "$MODEL" --task "$TASK" --data-dir "$DATA_DIR" --out "$OUT"
  --vllm colocate --vllm-gpu-memory 0.3 --report-to tensorboard
  "$@"
)
if [ -n "${PROGRESS_SQL_DRY_RUN:-}" ]; then
  printf '%s\n' "${command[@]}"
  exit 0
fi
exec "${command[@]}"
