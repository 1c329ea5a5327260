#!/usr/bin/env bash
# Quick start: set everything up, then run the main job on the embedded default data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/progress-sql demo "$@"
