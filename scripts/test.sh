#!/usr/bin/env bash
# Set everything up, then run the whole test suite: ruff, mypy (strict on src), pytest, and the verl
# tests in verl's own environment (verl 0.9.1 needs transformers < 5.11, the [trl] pins a newer one;
# scripts/verl_venv.sh builds it once, about 2 GB, and reuses it while constraints-verl.txt is unchanged).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev trl skyrl export serve ray
export OMP_NUM_THREADS=1
.venv/bin/ruff check src tests bench conftest.py
.venv/bin/ruff format --check src tests bench conftest.py
.venv/bin/mypy
.venv/bin/pytest -q "$@"
verl_venv="$(bash scripts/verl_venv.sh)"
PYTHONPATH="$PWD/src" "$verl_venv/bin/pytest" -q tests/with_verl src/progress_sql/integrations/verl
