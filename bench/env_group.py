"""Per-episode cost of the environment with G samples of one prompt, as GRPO rollouts use it.

Trainer adapters make one ``SQLRefineEnv`` per episode. Before the gold store, each environment
prepared its example again (schema read, ODT gold reference, DDL prompt with sample values; gold
results came from the process-wide cache), so one prompt's G samples paid that preparation G times.
With the store, the preparation happens once per example and each episode pays only its own turns.

Each prompt is rolled out G times with the same scripted two-turn policy (a published system's
prediction, then the gold); every episode starts from a fresh environment. ``--tree`` runs the
measurement against another checkout's ``src`` (for example the commit before the store) in a
subprocess, so that both figures come from the same run on the same machine.

    .venv/bin/python bench/env_group.py [--prompts N] [--group 8] [--tree ../old-checkout]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from _common import ROOT, add_output_options, command_line, machine, provenance, spider_dev_missing, write_section

SECTION = "## Environment, G samples per prompt"


def measure(data_dir: Path, prompts: int, group: int) -> dict[str, object]:
    """Run ``prompts`` x ``group`` episodes with the ``progress_sql`` on ``sys.path``; per-episode seconds."""
    from progress_sql.data.tasks import load_task
    from progress_sql.env import EnvConfig, SQLRefineEnv
    from progress_sql.errors import GoldQueryError
    from progress_sql.execution.pool import ExecutionPool
    from progress_sql.judge.cache import GoldCache

    examples = [e for e in load_task("spider-dev", data_dir / "spider") if Path(e.db_path).is_file()][:prompts]
    predictions = (data_dir / "predictions" / "spider-dev" / "model_1.txt").read_text(encoding="utf-8").splitlines()
    wrap = "<think>scripted</think><sql>{}</sql>".format
    config = EnvConfig(max_turns=2, timeout_s=2.0)
    with_store = "store" in inspect.signature(SQLRefineEnv.__init__).parameters
    episode_seconds: list[float] = []
    first_seconds: list[float] = []
    with ExecutionPool(workers=1) as pool:
        cache = GoldCache()
        if with_store:
            from progress_sql.env.core import make_store

            store = make_store(config, pool=pool, cache=cache)

            def new_env() -> SQLRefineEnv:
                return SQLRefineEnv(config, store=store)
        else:

            def new_env() -> SQLRefineEnv:
                return SQLRefineEnv(config, pool=pool, cache=cache)  # type: ignore[call-arg]

        for example in examples:
            for sample in range(group):
                began = time.perf_counter()
                env = new_env()
                try:
                    env.reset(example)
                except GoldQueryError:
                    break
                for response in (wrap(predictions[example.index]), wrap(example.gold_sql)):
                    step = env.step(response)
                    if step.terminated or step.truncated:
                        break
                elapsed = time.perf_counter() - began
                (first_seconds if sample == 0 else episode_seconds).append(elapsed)
    return {
        "api": "store" if with_store else "env-per-episode caches",
        "src": str(Path(inspect.getfile(SQLRefineEnv)).parents[2]),
        "episodes": len(first_seconds) + len(episode_seconds),
        "first_sample_ms": 1000 * statistics.median(first_seconds),
        "other_samples_ms": 1000 * statistics.median(episode_seconds),
        "mean_episode_ms": 1000 * statistics.fmean(first_seconds + episode_seconds),
    }


def in_tree(tree: Path, data_dir: Path, prompts: int, group: int) -> dict[str, object]:
    """:func:`measure` in a subprocess whose ``progress_sql`` comes from ``tree/src``."""
    code = (
        "import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
        "sys.path.insert(0, sys.argv[2]); import env_group; "
        "print(json.dumps(env_group.measure(Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))))"
    )
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    argv = [sys.executable, "-c", code, str(tree / "src"), str(ROOT / "bench"), str(data_dir), str(prompts), str(group)]
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--prompts", type=int, default=60, help="first N Spider dev examples with a database")
    parser.add_argument("--group", type=int, default=8, help="samples per prompt (GRPO's G)")
    parser.add_argument("--tree", type=Path, default=None, help="also measure this checkout (e.g. the old commit)")
    add_output_options(parser)
    args = parser.parse_args(argv)
    if spider_dev_missing(args.data_dir):
        return 1
    info = machine()
    runs = []
    if args.tree is not None:
        runs.append(
            ("before (" + args.tree.name + ")", in_tree(args.tree.resolve(), args.data_dir, args.prompts, args.group))
        )
    runs.append(("this checkout", in_tree(ROOT, args.data_dir, args.prompts, args.group)))
    columns = ("code", "api", "episodes", "sample 1 median ms", "samples 2..G median ms", "mean ms/episode")
    rows = [
        (name, str(r["api"]), str(r["episodes"]), f"{r['first_sample_ms']:.2f}", f"{r['other_samples_ms']:.2f}",
         f"{r['mean_episode_ms']:.2f}")
        for name, r in runs
    ]  # fmt: skip
    for row in rows:
        print(" | ".join(row))
    if len(runs) == 2:
        ratio = float(runs[0][1]["mean_episode_ms"]) / float(runs[1][1]["mean_episode_ms"])  # type: ignore[arg-type]
        print(f"mean episode cost ratio, before / now: {ratio:.2f}x")
    if not args.no_doc:
        command = command_line("bench/env_group.py", argv)
        lines = [
            SECTION,
            "",
            f"{args.prompts} Spider dev prompts x G = {args.group} samples, a fresh `SQLRefineEnv` per episode (as",
            "the trainer adapters make them), T = 2 scripted turns (published system 1's prediction, then the gold),",
            "one execution worker. Sample 1 of a prompt pays the example's preparation; samples 2..G show whether",
            "it is paid again.",
            "",
            *provenance(command, info),
            "",
            "| " + " | ".join(columns) + " |",
            "|---|---|" + "---:|" * (len(columns) - 2),
            *(f"| {' | '.join(row)} |" for row in rows),
            "",
        ]
        if len(runs) == 2:
            lines += [f"Mean cost per episode, before / now: {ratio:.2f}x.", ""]
        write_section(args.doc, SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
