#!/usr/bin/env bash
# Create (or reuse) .venv and install progress-sql with the exact pins of constraints.txt.
# Usage: bash scripts/setup.sh [extra ...]     e.g. bash scripts/setup.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"progress-sql needs Python >= 3.10, found {sys.version.split()[0]}")
PY
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
extras="$(IFS=,; echo "$*")"
target="."
[ -n "$extras" ] && target=".[${extras}]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e "$target"
