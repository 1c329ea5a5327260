#!/usr/bin/env bash
# Set everything up, then run the whole test suite: ruff, mypy (strict on src), pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev trl skyrl export
export OMP_NUM_THREADS=1
.venv/bin/ruff check src tests bench
.venv/bin/ruff format --check src tests bench
.venv/bin/mypy
.venv/bin/pytest -q "$@"
