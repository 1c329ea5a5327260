#!/usr/bin/env bash
# Build (or reuse) the side environment NAME from constraints-NAME.txt and print its path.
#
# Packages whose pins clash with the [trl] environment (verl, and the environment standards of
# docs/standards.md) run their tests in virtual environments of their own, built from the exact pins
# of constraints-NAME.txt and cached outside the checkout at
#     ${PROGRESS_SQL_CACHE:-$HOME/.cache/progress-sql}/NAME-venv-<sha256 of constraints-NAME.txt, 16 hex>
# A `.complete` marker is written as the very last step: an environment without it (an interrupted
# build) is removed and built again. A new lock file gives a new folder; old ones can be deleted.
# progress-sql itself is not installed there (the folder outlives any one checkout): callers put
# src/ on PYTHONPATH. Header lines of the lock file that the build reads:
#     # pip-options: --ignore-requires-python      extra options of `pip install -r`
#     # check: import verifiers                      Python run in the new environment before it counts
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:?usage: scripts/side_venv.sh NAME (builds from constraints-NAME.txt)}"
PYTHON="${PYTHON:-python3}"
lock="constraints-$name.txt"
[ -f "$lock" ] || { echo "no lock file $lock" >&2; exit 2; }
key="$(sha256sum "$lock" | cut -c1-16)"
cache="${PROGRESS_SQL_CACHE:-$HOME/.cache/progress-sql}"
venv="$cache/$name-venv-$key"
if [ -f "$venv/.complete" ]; then
  echo "$venv"
  exit 0
fi
read -r -a pip_options <<< "$(sed -n 's/^# pip-options: *//p' "$lock" | head -n 1)"
check="$(sed -n 's/^# check: *//p' "$lock" | head -n 1)"
mkdir -p "$cache"
rm -rf "$venv"
echo "building the $name environment in $venv ..." >&2
start=$(date +%s)
"$PYTHON" -m venv "$venv"
log="$cache/$name-venv-$key.log"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check "${pip_options[@]}" -r "$lock" > "$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "building the $name environment failed; the whole log is $log" >&2
  exit 1
fi
if [ -n "$check" ]; then
  "$venv/bin/python" -c "$check" >&2
fi
echo "$name environment built in $(( $(date +%s) - start )) s" >&2
touch "$venv/.complete"
echo "$venv"
