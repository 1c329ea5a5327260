#!/usr/bin/env bash
# Build (or reuse) the verl test environment and print its path.
#
# verl 0.9.1 needs transformers < 5.11; the [trl] environment pins a newer one. The verl tests
# therefore run in their own virtual environment, built by scripts/side_venv.sh from the exact pins of
# constraints-verl.txt (about 2 GB; docs/benchmarks.md records how long a build takes).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="$(bash scripts/side_venv.sh verl)"
"$venv/bin/python" -c "import verl, transformers, torch; assert verl.__version__ == '0.9.1', verl.__version__" >&2
echo "$venv"
