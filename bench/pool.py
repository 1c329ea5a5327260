"""What the execution pool costs per job: a batch of trivial queries (``SELECT i``, so the queries
themselves cost nothing) and a batch of Spider dev's gold queries (what ``eval`` runs first), through
``ExecutionPool(workers)`` with its workers already started; wall time and the parent's CPU time.

``--tree`` also measures another checkout's ``src`` (the pool before a change) in a subprocess,
interleaved with this checkout's, so that both figures come from the same run on the same machine.
The gold batch needs ../shared/data (skipped with a message without it).

    .venv/bin/python bench/pool.py [--jobs 1300] [--workers 2] [--repeat 7] [--tree ../old-checkout]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _common import ROOT, add_output_options, command_line, machine, provenance, write_section

SECTION = "## Execution pool: cost per job"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(data_dir: Path, jobs: int, workers: int) -> dict[str, list[float] | None]:
    """One round: (wall s, parent CPU s) of the trivial batch and of the gold batch (None without data)."""
    import sqlite3

    from progress_sql.data.tasks import load_task
    from progress_sql.execution.executor import ExecLimits
    from progress_sql.execution.jobs import ExecJob
    from progress_sql.execution.pool import ExecutionPool

    limits = ExecLimits(timeout_s=30)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "one.sqlite"
        sqlite3.connect(db).close()
        trivial = [ExecJob(str(db), f"SELECT {i}", limits) for i in range(jobs)]
        golds: list[ExecJob] = []
        if (data_dir / "spider" / "dev.json").is_file():
            examples = load_task("spider-dev", data_dir / "spider")
            golds = [ExecJob(e.db_path, e.gold_sql, limits) for e in examples if Path(e.db_path).is_file()]
        out: dict[str, list[float] | None] = {}
        with ExecutionPool(workers) as pool:
            pool.run_many(trivial[: 4 * workers])  # workers started, databases opened once
            if golds:
                pool.run_many(golds)
            for name, batch in (("trivial", trivial), ("gold", golds)):
                if not batch:
                    out[name] = None
                    continue
                wall, cpu = time.perf_counter(), _cpu()
                pool.run_many(batch)
                out[name] = [time.perf_counter() - wall, _cpu() - cpu]
    return out


def in_tree(tree: Path, data_dir: Path, jobs: int, workers: int) -> dict[str, list[float] | None]:
    """:func:`measure` in a fresh subprocess whose ``progress_sql`` comes from ``tree/src``."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "if __name__ == '__main__':\n"
        "    sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])\n"
        "    import pool\n"
        "    print(json.dumps(pool.measure(Path(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))))\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(code)
    try:
        env = {**os.environ, "PYTHONPATH": str(tree / "src")}
        argv = [
            sys.executable,
            script.name,
            str(tree / "src"),
            str(ROOT / "bench"),
            str(data_dir),
            str(jobs),
            str(workers),
        ]
        done = subprocess.run(argv, env=env, check=True, capture_output=True, text=True)
    finally:
        os.unlink(script.name)
    result: dict[str, list[float] | None] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=1300, help="trivial queries per batch")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=7, help="fresh processes of each (median)")
    parser.add_argument("--tree", type=Path, default=None, help="also measure this checkout (e.g. the old commit)")
    add_output_options(parser)
    args = parser.parse_args(argv)
    info = machine()
    trees = [("this checkout", ROOT)] + ([("before", args.tree.resolve())] if args.tree is not None else [])
    rounds: dict[str, list[dict[str, list[float] | None]]] = {name: [] for name, _ in trees}
    for repeat in range(args.repeat):  # interleaved: every tree sees the same machine load
        for name, tree in trees:
            rounds[name].append(in_tree(tree, args.data_dir, args.jobs, args.workers))
            print(f"round {repeat + 1} {name}: {rounds[name][-1]}", flush=True)
    if rounds["this checkout"][0]["gold"] is None:
        print(f"note: {args.data_dir}/spider/dev.json not found: the gold batch was skipped", file=sys.stderr)

    def median(name: str, batch: str, column: int) -> float | None:
        values = [r[batch] for r in rounds[name]]
        kept = [v[column] for v in values if v is not None]
        return statistics.median(kept) if kept else None

    lines = [
        f"| pool | batch | jobs | wall s (median of {args.repeat}) | parent CPU s | wall ms per job |",
        "|---|---|---:|---:|---:|---:|",
    ]
    gold_jobs = "972" if rounds["this checkout"][0]["gold"] is not None else "-"
    for name, _tree in trees:
        for batch, count in (("trivial", str(args.jobs)), ("gold", gold_jobs)):
            wall, cpu = median(name, batch, 0), median(name, batch, 1)
            if wall is None or cpu is None:
                continue
            per_job = 1000 * wall / int(count)
            lines.append(f"| {name} | {batch} | {count} | {wall:.3f} | {cpu:.3f} | {per_job:.3f} |")
    if args.tree is not None:
        for batch in ("trivial", "gold"):
            now, before = median("this checkout", batch, 0), median("before", batch, 0)
            if now and before:
                lines.append(f"\n{batch}: before / this checkout = **{before / now:.2f}x** (wall)")
    print("\n".join(lines))
    if not args.no_doc:
        body = [
            SECTION,
            "",
            "A batch of trivial queries (`SELECT i` on an empty database: the per-job cost of the pool alone)",
            "and Spider dev's 972 gold queries (what `eval` runs first) through `ExecutionPool(workers)`, workers",
            "started before timing; wall time and the parent's CPU time, each round a fresh process, the",
            "checkouts interleaved.",
            "",
            *provenance(command_line("bench/pool.py", argv), info),
            "",
            *lines,
            "",
        ]
        write_section(args.doc, SECTION, "\n".join(body))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
