#!/usr/bin/env bash
# TRL smoke run: one GPU, a 0.5B model, 5 RL steps with vLLM colocated, in minutes. Run it before
# an 8-GPU job (qwen7b.sh): it goes through every piece of a real run (the model's chat template, the
# multi-turn rollout through vLLM with its log-probabilities, the progressive reward, the optimizer,
# a checkpoint, the final save and held-out EX before and after).
#
# Environment: MODEL (default Qwen/Qwen2.5-0.5B-Instruct), TASK (default spider-train: Spider's training
# questions; an evaluation task such as spider-dev is refused by the leakage guard, exit 2), DATA_DIR
# (the benchmark folder), OUT (default runs/trl-smoke). Extra arguments go to
# `progress-sql train` and win. PROGRESS_SQL_DRY_RUN=1 prints the command instead of running it.
#
# What a healthy run shows (expected shapes, not measured figures):
# - stderr: progress bars "gold audit", "EX before RL", "RL (grpo, reward progressive)" 5/5, "EX after RL";
# - OUT/rl/metrics.jsonl: 5 rows, steps 1..5, each with a finite loss; steps 1 and 5, the ones that
#   generated (the trainer setting's 4 updates per generated batch, here of 16 prompts), also with reward,
#   rewards/{fmt,exec,late,align}/mean, trajectory/turns_mean between 1 and 4, frac_reward_zero_std
#   below 1 (groups with a signal) and completions/mean_length above 0;
# - OUT/rl/checkpoints/checkpoint-5 (the only one kept) and OUT/rl/final/ (config.json,
#   model.safetensors, the tokenizer), which `progress-sql eval --backend transformers` loads;
# - stdout: the held-out EX table before and after RL (5 steps at lr 1e-6 barely move it).
set -euo pipefail

MODEL="${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}"
TASK="${TASK:-spider-train}"
DATA_DIR="${DATA_DIR:-$HOME/data/spider}"
OUT="${OUT:-runs/trl-smoke}"

command=(
  progress-sql train --model "$MODEL" --task "$TASK" --data-dir "$DATA_DIR" --out "$OUT"
  --steps 5 --prompts-per-step 4 --per-device-batch 8 --rl-prompts 64
  --max-turn-tokens 512 --max-completion-tokens 2048
  --save-steps 5 --save-total-limit 1
  --vllm colocate --vllm-gpu-memory 0.3
  "$@"
)
if [ -n "${PROGRESS_SQL_DRY_RUN:-}" ]; then
  printf '%s\n' "${command[@]}"
  exit 0
fi
exec "${command[@]}"
