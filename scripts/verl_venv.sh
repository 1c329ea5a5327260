#!/usr/bin/env bash
# Build (or reuse) the verl test environment and print its path.
#
# verl 0.9.1 needs transformers < 5.11; the [trl] environment pins a newer one. The verl tests
# therefore run in their own virtual environment, built from the exact pins of constraints-verl.txt
# and cached outside the checkout at
#     ${PROGRESS_SQL_CACHE:-$HOME/.cache/progress-sql}/verl-venv-<sha256 of constraints-verl.txt, 16 hex>
# A `.complete` marker is written as the very last step: an environment without it (an interrupted
# build) is removed and built again. A new lock file gives a new folder; old ones can be deleted.
# progress-sql itself is not installed there (the folder outlives any one checkout): callers put
# src/ on PYTHONPATH. About 2 GB; docs/benchmarks.md records how long a build takes.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
lock="constraints-verl.txt"
key="$(sha256sum "$lock" | cut -c1-16)"
cache="${PROGRESS_SQL_CACHE:-$HOME/.cache/progress-sql}"
venv="$cache/verl-venv-$key"
if [ -f "$venv/.complete" ]; then
  echo "$venv"
  exit 0
fi
mkdir -p "$cache"
rm -rf "$venv"
echo "building the verl environment in $venv (about 2 GB) ..." >&2
start=$(date +%s)
"$PYTHON" -m venv "$venv"
log="$cache/verl-venv-$key.log"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check -r "$lock" > "$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "building the verl environment failed; the whole log is $log" >&2
  exit 1
fi
"$venv/bin/python" -c "import verl, transformers, torch; assert verl.__version__ == '0.9.1', verl.__version__" >&2
echo "verl environment built in $(( $(date +%s) - start )) s" >&2
touch "$venv/.complete"
echo "$venv"
