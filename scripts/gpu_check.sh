#!/usr/bin/env bash
# The GPU check: the project's real `progress-sql train` on CUDA, single process, on a tiny Qwen2 built
# from a config (full fine-tuning at the paper's lr 1e-6, --lora, FSDP2 with one process through
# accelerate launch), the saved weights compared with the initial ones, the dtypes and step times
# recorded; $OUT/gpu_check.json has pass / fail / skipped per check with the reasons (scripts/gpu_check.py
# does the work; docs/training.md, "The GPU check", says how to run it and what a healthy run prints).
#
#   bash scripts/gpu_check.sh --prepare   here, with the package registry: download the wheels the GPU
#                                         machine lacks into .gpu-check/wheels (ignored by git)
#   bash scripts/gpu_check.sh             on the GPU machine (no network), .gpu-check carried along:
#                                         install what its python3 lacks, run the check into $OUT
#   bash scripts/gpu_check.sh --cpu       the same checks on this machine's CPU with .venv (CI runs it:
#                                         tests/integrations/test_gpu_check.py); FSDP is skipped there
#   bash scripts/gpu_check.sh --list      print the carried wheels' pins (constraints.txt's)
#
# The carried wheels (pure Python; pins of constraints.txt; measured 2026-12-04). The GPU machine has
# torch 2.11, transformers 5.17, accelerate 1.15, huggingface_hub 1.33, tokenizers, safetensors, pyarrow,
# pandas, xxhash, rich and most of the rest already: they are not carried (transformers 5.17 satisfies
# our [trl] range and TRL 1.16.0's transformers>=4.56.2; the check passed with it). A wheel is installed
# there only when that python3 lacks the package or has a version outside the range that
# scripts/gpu_check.py's CARRIED names (on the H200 machine: trl, datasets, dill, multiprocess, sqlglot).
#      0.90 MiB  trl-1.16.0-py3-none-any.whl
#      0.58 MiB  datasets-5.2.0-py3-none-any.whl
#      0.11 MiB  dill-0.4.1-py3-none-any.whl
#      0.14 MiB  multiprocess-0.70.19-py311-none-any.whl   (one per Python: 3.11, 3.12, 3.13)
#      0.14 MiB  multiprocess-0.70.19-py312-none-any.whl
#      0.15 MiB  multiprocess-0.70.19-py313-none-any.whl
#      0.77 MiB  sqlglot-30.30.0-py3-none-any.whl          (the compiled sqlglotc, 18 MiB, is not needed)
#      0.12 MiB  typer-0.28.0-py3-none-any.whl
#      0.80 MiB  peft-0.21.2-py3-none-any.whl
#      3.71 MiB  in all
#
# On the device machine: command `bash scripts/gpu_check.sh`, carry [".gpu-check"], timeout 420 s (about
# 3.5 minutes on an H200). Optional variables there: GPU_CHECK_BUDGET (seconds, default 420),
# GPU_CHECK_RUNS (full,lora,fsdp), GPU_CHECK_NO_CUDNN_SDPA=1 (torch's cuDNN attention off in the runs),
# GPU_CHECK_DETECT_ANOMALY=1 (a NaN gradient fails at the operation that made it), GPU_CHECK_WORK (the
# working folder; default a new temporary one), PYTHON (default python3).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
WHEELS="$ROOT/.gpu-check/wheels"

local_python() {
    if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; elif [ -x .venv/bin/python ]; then echo .venv/bin/python; else echo python3; fi
}

case "${1:-}" in
    --prepare)
        exec "$(local_python)" scripts/gpu_check.py prepare --dest "$WHEELS"
        ;;
    --list)
        exec "$(local_python)" scripts/gpu_check.py wheels
        ;;
    --cpu)
        PY="$(local_python)"
        OUT="${OUT:-$ROOT/runs/gpu-check-cpu}"
        work=()
        [ -z "${GPU_CHECK_WORK:-}" ] || work=(--work "$GPU_CHECK_WORK")
        exec env OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}" \
            "$PY" scripts/gpu_check.py run --device cpu --out "$OUT" --budget "${GPU_CHECK_BUDGET:-600}" "${work[@]}"
        ;;
    "")
        PY="${PYTHON:-python3}"
        if [ -z "${OUT:-}" ]; then
            echo "gpu_check: set OUT to the folder for gpu_check.json (the device machine sets it)" >&2
            exit 2
        fi
        if [ ! -d "$WHEELS" ]; then
            echo "gpu_check: $WHEELS is missing: run 'bash scripts/gpu_check.sh --prepare' here and carry .gpu-check" >&2
            exit 2
        fi
        echo "gpu_check: $("$PY" --version 2>&1) at $(command -v "$PY")"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "gpu_check: no nvidia-smi"
        work=()
        [ -z "${GPU_CHECK_WORK:-}" ] || work=(--work "$GPU_CHECK_WORK")
        [ -z "${GPU_CHECK_RUNS:-}" ] || work+=(--runs "$GPU_CHECK_RUNS")
        [ "${GPU_CHECK_DETECT_ANOMALY:-0}" = 0 ] || work+=(--detect-anomaly)
        [ "${GPU_CHECK_NO_CUDNN_SDPA:-0}" = 0 ] || work+=(--no-cudnn-sdpa)
        exec env PYTHONUNBUFFERED=1 "$PY" scripts/gpu_check.py run --device cuda --out "$OUT" --wheels "$WHEELS" \
            --budget "${GPU_CHECK_BUDGET:-420}" "${work[@]}"
        ;;
    *)
        echo "usage: bash scripts/gpu_check.sh [--prepare | --list | --cpu]" >&2
        exit 2
        ;;
esac
