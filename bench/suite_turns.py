"""Environment turns per second with and without a test suite (issue 18: the cost of `--suite`).

Builds the Spider dev suites (`progress-sql build-suite`, seed 0, the defaults: median 3 fuzzed
databases per schema), then runs the same episodes twice over one warm gold store each: T = 2, turn 1
the first published system's prediction, turn 2 the gold (so most episodes reach a match, and every
match runs on the suite). The gold is prepared before the clock starts (a trainer's G samples and
later steps reuse it). Prints the median of ``--repeats`` timed passes per arm and their ratio.

    .venv/bin/python bench/suite_turns.py [--examples N] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from progress_sql.data.tasks import load_task
from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env.core import make_store
from progress_sql.execution.pool import ExecutionPool

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def answer(sql: str) -> str:
    return f"<think>.</think><sql>{sql}</sql>"


def one_pass(config: EnvConfig, pool: ExecutionPool, episodes: list[tuple[object, list[str]]]) -> tuple[int, float]:
    turns = 0
    with make_store(config, pool=pool) as store:
        for example, _ in episodes:
            store.prepare(example)  # type: ignore[arg-type]
        start = time.perf_counter()
        for example, script in episodes:
            env = SQLRefineEnv(config, store=store)
            env.reset(example)  # type: ignore[arg-type]
            for response in script:
                turns += 1
                step = env.step(response)
                if step.terminated or step.truncated:
                    break
        return turns, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spider = DATA / "spider"
    if not spider.is_dir():
        sys.exit(f"needs {spider} (../shared/data)")
    examples = [e for e in load_task("spider-dev", spider) if Path(e.db_path).is_file()][: args.examples]
    predicted = (DATA / "predictions" / "spider-dev" / "model_1.txt").read_text().splitlines()
    everything = load_task("spider-dev", spider)
    by_index = {e.index: predicted[e.index] for e in everything}
    episodes = [(e, [answer(by_index[e.index]), answer(e.gold_sql)]) for e in examples]
    with tempfile.TemporaryDirectory() as folder:
        suite = Path(folder) / "suite"
        command = ["build-suite", "--task", "spider-dev", "--data-dir", str(spider), "--out", str(suite),
                   "--workers", "1", "--json"]  # fmt: skip
        cli = "from progress_sql.cli import main; main()"
        subprocess.run([sys.executable, "-c", cli, *command], check=True, capture_output=True)
        arms = {"no suite": EnvConfig(max_turns=2), "suite": EnvConfig(max_turns=2, suite=str(suite))}
        rates: dict[str, list[float]] = {name: [] for name in arms}
        with ExecutionPool(workers=1) as pool:
            for _ in range(args.repeats):
                for name, config in arms.items():  # interleaved: both arms see the same machine load
                    turns, seconds = one_pass(config, pool, episodes)
                    rates[name].append(turns / seconds)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(f"episodes {len(episodes)}, turns per pass {turns}, repeats {args.repeats}")
    for name, value in medians.items():
        print(f"{name}: median {value:.1f} turns/s (passes: {', '.join(f'{v:.1f}' for v in rates[name])})")
    print(f"suite / no suite: {medians['suite'] / medians['no suite']:.2f}x")


if __name__ == "__main__":
    main()
