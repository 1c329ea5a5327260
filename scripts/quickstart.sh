#!/usr/bin/env bash
# Quick start: set everything up, then run the main job: `progress-sql train` on the embedded default
# (template data over two embedded Spider databases, a tiny model, supervised warm start, multi-turn
# GRPO with the progressive reward, EX before and after; about 8 minutes on a 2-core CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh trl plot
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
exec .venv/bin/progress-sql train --out "${PROGRESS_SQL_OUT:-runs/train}" "$@"
