#!/usr/bin/env bash
# TRL with vLLM in server mode on one machine: `trl vllm-serve` generates the rollouts on GPUs of its own
# (the last SERVER_GPUS of the machine, tensor parallel over them), and `accelerate launch` of
# `progress-sql train --vllm server` trains on the others, one process each, sending the new weights to
# the server after each step (TRL's NCCL weight transfer). By default 4 GPUs generate and 4 train, the
# split of TRL's vLLM integration guide. Qwen2.5-Coder-7B-Instruct with the real-model defaults (GRPO,
# G = 8, temperature 1.0, T = 4, lr 1e-6; 1e-5 with --lora), every weight trained under DeepSpeed ZeRO-3
# (zero3.yaml; fsdp.yaml with ACCELERATE_CONFIG=fsdp.yaml), logs to TensorBoard. The script waits for the
# server's /health before it starts training and stops the server when it exits, however it exits.
#
# Environment: MODEL, TASK (default spider-train: Spider's training questions), DATA_DIR, OUT,
# ACCELERATE_CONFIG (a file of recipes/trl/, default zero3.yaml; its num_processes is replaced by the
# trainers' count), GPUS (GPUs of the machine, numbered 0..GPUS-1; default 8), SERVER_GPUS (how many of
# the last ones the server takes, its tensor-parallel size, which must divide the model's attention heads;
# default 4), VLLM_HOST (default 127.0.0.1: the server's weight-update endpoints stay off the network),
# VLLM_PORT (default 8000), SERVER_WAIT (seconds to wait for the server, also train's
# --vllm-server-timeout; default 900). A step's prompts x 8 samples must split into passes of 4 sequences
# on every trainer: 1, 2, 4 or 8 trainers split the default step; with 6, pass a multiple of 3 prompts
# (--prompts-per-step 12: 12 prompts an update, 48 a generated batch). Extra arguments go to `progress-sql train` and win. PROGRESS_SQL_DRY_RUN=1
# prints the commands instead of running them: the server's, the health probe's and the training's, each
# one argument per line, a blank line between two.
#
# What a healthy run shows (expected shapes, not measured figures): OUT/vllm-server.log ending in vLLM's
# "Application startup complete", then one request line per rollout turn; "server up" on stderr; one
# progress bar per training process and the real-model defaults' RL steps; OUT/rl/metrics.jsonl with one
# row per step (as in smoke.sh); checkpoints and OUT/rl/final/ as in qwen7b.sh; after the run, no process
# of the server left on its GPUs. With several processes held-out EX is not measured inside the run:
# `progress-sql eval` on OUT/rl/final does it (docs/training.md, "TRL on GPUs").
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODEL="${MODEL:-Qwen/Qwen2.5-Coder-7B-Instruct}"
DATA_DIR="${DATA_DIR:-$HOME/data/spider}"
TASK="${TASK:-spider-train}"
OUT="${OUT:-runs/trl-vllm-server}"
ACCELERATE_CONFIG="${ACCELERATE_CONFIG:-zero3.yaml}"
GPUS="${GPUS:-8}"
SERVER_GPUS="${SERVER_GPUS:-4}"
VLLM_HOST="${VLLM_HOST:-127.0.0.1}"
VLLM_PORT="${VLLM_PORT:-8000}"
SERVER_WAIT="${SERVER_WAIT:-900}"

if [ "$SERVER_GPUS" -lt 1 ] || [ "$SERVER_GPUS" -ge "$GPUS" ]; then
  echo "error: SERVER_GPUS ($SERVER_GPUS) must leave at least one of the GPUS ($GPUS) to the trainers" >&2
  exit 2
fi
TRAINERS=$((GPUS - SERVER_GPUS))
TRAIN_DEVICES="$(seq -s, 0 $((TRAINERS - 1)))"
SERVER_DEVICES="$(seq -s, "$TRAINERS" $((GPUS - 1)))"

server=(
  env CUDA_VISIBLE_DEVICES="$SERVER_DEVICES"
  trl vllm-serve --model "$MODEL" --tensor-parallel-size "$SERVER_GPUS" --host "$VLLM_HOST" --port "$VLLM_PORT"
)
health=(curl --silent --fail --max-time 5 "http://$VLLM_HOST:$VLLM_PORT/health")
command=(
  env CUDA_VISIBLE_DEVICES="$TRAIN_DEVICES"
  accelerate launch --config_file "$HERE/$ACCELERATE_CONFIG" --num_processes "$TRAINERS"
  "$(command -v progress-sql || echo progress-sql)"
  train --model "$MODEL" --task "$TASK" --data-dir "$DATA_DIR" --out "$OUT"
  --report-to tensorboard
  --vllm server --vllm-server-host "$VLLM_HOST" --vllm-server-port "$VLLM_PORT" --vllm-server-timeout "$SERVER_WAIT"
  "$@"
)
if [ -n "${PROGRESS_SQL_DRY_RUN:-}" ]; then
  printf '%s\n' "${server[@]}"
  echo
  printf '%s\n' "${health[@]}"
  echo
  printf '%s\n' "${command[@]}"
  exit 0
fi

mkdir -p "$OUT"
# a process group of its own (setsid), so that the trap stops vLLM's worker processes with it
setsid "${server[@]}" >"$OUT/vllm-server.log" 2>&1 &
server_pid=$!
stop_server() {
  kill -TERM -- "-$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 130' INT TERM

waited=0
until "${health[@]}" >/dev/null; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "error: the vLLM server exited before it was up; see $OUT/vllm-server.log" >&2
    exit 1
  fi
  if [ "$waited" -ge "$SERVER_WAIT" ]; then
    echo "error: the vLLM server was not up after ${SERVER_WAIT} s; see $OUT/vllm-server.log" >&2
    exit 1
  fi
  sleep 5
  waited=$((waited + 5))
done
echo "server up: http://$VLLM_HOST:$VLLM_PORT (GPUs $SERVER_DEVICES); training on GPUs $TRAIN_DEVICES" >&2
"${command[@]}"
