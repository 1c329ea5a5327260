"""Build test suites for every Spider dev database at hand and measure what they give.

* **build**: ``progress-sql build-suite --task spider-dev`` in a fresh process (all 19 databases,
  ``--workers W``), wall time; then the same command again into another folder (**rebuild**), which
  must give byte-identical files;
* **checks**: ``PRAGMA integrity_check`` on every suite database, ``PRAGMA foreign_key_check`` where
  the schema's declarations are valid (exempted schemas are listed);
* **coverage**: per-gold neighbour coverage over the 972 examples with a database (and over distinct
  gold queries), its distribution, suite sizes per database;
* **EX vs TS**: the gold as prediction and the five published systems' Spider dev predictions,
  evaluated with ``harness.evaluate`` on the original databases (EX) and the suite (TS); the EX - TS
  gap per model. Baseline in the same run: the time of the EX-only evaluation of those files.

    .venv/bin/python bench/testsuite.py [--workers W] [--seed N] [--pool K] [--max-dbs M]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from _common import ROOT, add_output_options, command_line, machine, provenance, write_section
from progress_sql.data.tasks import resolve_task
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.evaluation.predictions import load_predictions
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.testsuite.manifest import suite_lookup

SECTION = "## Test suites"


def _build(spider: Path, out: Path, args: argparse.Namespace) -> float:
    command = [str(ROOT / ".venv" / "bin" / "progress-sql"), "build-suite", "--task", "spider-dev", "--data-dir",
               str(spider), "--out", str(out), "--seed", str(args.seed), "--pool", str(args.pool), "--max-dbs",
               str(args.max_dbs), "--workers", str(args.workers), "--json"]  # fmt: skip
    if not Path(command[0]).exists():
        command[0] = "progress-sql"
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - start


def _identical(first: Path, second: Path) -> tuple[int, list[str]]:
    files = sorted(p.relative_to(first) for p in first.rglob("*.sqlite"))
    others = sorted(p.relative_to(second) for p in second.rglob("*.sqlite"))
    differ = [str(p) for p in files if not filecmp.cmp(first / p, second / p, shallow=False)]
    if files != others:
        differ.append("file lists differ")
    if not filecmp.cmp(first / "manifest.json", second / "manifest.json", shallow=False):
        differ.append("manifest.json")
    return len(files), differ


def _checks(suite: Path, manifest: dict[str, Any]) -> tuple[int, list[str], dict[str, list[str]]]:
    failures, exempt = [], {}
    count = 0
    for db_id, entry in manifest["databases"].items():
        if entry["invalid_foreign_keys"]:
            exempt[db_id] = sorted(entry["invalid_foreign_keys"])
        for path in sorted((suite / db_id).glob("*.sqlite")):
            count += 1
            with sqlite3.connect(path) as conn:
                if conn.execute("PRAGMA integrity_check").fetchall() != [("ok",)]:
                    failures.append(f"{path.name} integrity")
                if not entry["invalid_foreign_keys"] and conn.execute("PRAGMA foreign_key_check").fetchall():
                    failures.append(f"{db_id}/{path.name} foreign keys")
    return count, failures, exempt


def _distribution(values: list[float]) -> str:
    bins = [("100%", lambda v: v >= 1), ("90-99%", lambda v: 0.9 <= v < 1), ("80-89%", lambda v: 0.8 <= v < 0.9),
            ("50-79%", lambda v: 0.5 <= v < 0.8), ("< 50%", lambda v: v < 0.5)]  # fmt: skip
    return ", ".join(f"{name}: {sum(1 for v in values if test(v))}" for name, test in bins)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=2, help="schemas built in parallel; execution workers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool", type=int, default=24)
    parser.add_argument("--max-dbs", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per query in the evaluation")
    add_output_options(parser)
    args = parser.parse_args(argv)
    spider = args.data_dir / "spider"
    folder = args.data_dir / "predictions" / "spider-dev"
    if not (spider / "dev.json").is_file():
        print(f"error: {spider}/dev.json not found (needs ../shared/data)", file=sys.stderr)
        return 1
    info = machine()
    console = Console(width=160)
    examples = resolve_task("spider-dev", spider)[1]
    present = [e for e in examples if Path(e.db_path).is_file()]
    with tempfile.TemporaryDirectory() as work:
        suite, again = Path(work) / "suite", Path(work) / "again"
        build_s = _build(spider, suite, args)
        console.print(f"build: {build_s:.1f} s")
        rebuild_s = _build(spider, again, args)
        files, differ = _identical(suite, again)
        manifest = json.loads((suite / "manifest.json").read_text(encoding="utf-8"))
        checked, failures, exempt = _checks(suite, manifest)

        gold_entry = {(db_id, g["sql"]): g for db_id, entry in manifest["databases"].items() for g in entry["golds"]}
        per_example = [gold_entry[(e.db_id, e.gold_sql)]["coverage"] for e in present]
        with_neighbours = [v for v in per_example if v is not None]
        distinct = [g["coverage"] for g in gold_entry.values() if g["coverage"] is not None]
        sizes = {db_id: len(entry["suite"]) for db_id, entry in manifest["databases"].items()}

        preset = get_preset("spider")
        limits = ExecLimits(timeout_s=args.timeout)
        systems: list[tuple[str, list[str]]] = [("gold", [e.gold_sql for e in examples])]
        systems += [(f"model_{k}", load_predictions(folder / f"model_{k}.txt", len(examples))) for k in range(1, 6)
                    if (folder / f"model_{k}.txt").is_file()]  # fmt: skip
        results = []
        with ExecutionPool(workers=args.workers) as pool:
            for name, predictions in systems:
                samples = [[Sample(sql)] for sql in predictions]
                start = time.perf_counter()
                plain = evaluate(examples, samples, GoldStore(preset, pool=pool, limits=limits, cache=GoldCache()))
                ex_s = time.perf_counter() - start
                start = time.perf_counter()
                with_suite = GoldStore(preset, pool=pool, limits=limits, cache=GoldCache(), suite=suite_lookup(suite))
                records = evaluate(examples, samples, with_suite)
                ts_s = time.perf_counter() - start
                scored = [r for r in records if r.status == "scored"]
                ex = sum(r.match for r in scored) / len(scored)
                ts = sum(bool(r.ts_match) for r in scored) / len(scored)
                assert [r.match for r in plain] == [r.match for r in records]
                results.append((name, len(scored), ex, ts, ex_s, ts_s))
                console.print(f"{name}: EX {100 * ex:.2f}  TS {100 * ts:.2f}  gap {100 * (ex - ts):.2f}")

    console.print(f"suite files {files}, identical on rebuild: {not differ}; checks failed: {failures or 'none'}")
    console.print(f"coverage mean over {len(with_neighbours)} examples: {100 * statistics.fmean(with_neighbours):.2f}%")
    if args.no_doc:
        return 0
    invocation = command_line("bench/testsuite.py", argv)
    quartiles = statistics.quantiles(with_neighbours, n=4)
    identical = "all byte-identical, manifest included" if not differ else "DIFFER: " + ", ".join(differ)
    mean = 100 * statistics.fmean(with_neighbours)
    lines = [
        SECTION,
        "",
        "Test suites distilled for the 19 Spider dev databases at hand (`wta_1` is absent): fuzzed databases,",
        "neighbour queries of every dev gold, greedy set cover (docs/testsuite.md). Then EX and TS of the gold and",
        "of the five published systems' predictions on the 972 dev questions with a database (`spider` preset).",
        "",
        *provenance(invocation, info),
        "",
        f"| build (seed {args.seed}, pool {args.pool}, max {args.max_dbs} databases, {args.workers} workers) "
        "| seconds |",
        "|---|---:|",
        f"| `progress-sql build-suite --task spider-dev` (fresh process, all 19 schemas) | {build_s:.1f} |",
        f"| the same command again into another folder | {rebuild_s:.1f} |",
        "",
        f"Rebuild: {files} suite files, {identical}.  ",
        f"Checks: {checked} suite databases; `PRAGMA integrity_check` ok on all"
        + ("" if not failures else f" but {', '.join(failures)}")
        + "; `PRAGMA foreign_key_check` empty wherever the declarations are valid; exempted (invalid declarations): "
        + (", ".join(f"{db} ({', '.join(tables)})" for db, tables in exempt.items()) or "none")
        + ".",
        "",
        f"Fuzzed databases per suite (the original aside): {', '.join(f'{db} {n}' for db, n in sorted(sizes.items()))};"
        f" {sum(sizes.values())} in all, median {statistics.median(sizes.values()):g}.",
        "",
        f"Neighbour coverage over the {len(with_neighbours)} of {len(present)} examples whose gold has neighbours: mean"
        f" **{mean:.2f}%**, quartiles {100 * quartiles[0]:.1f} / {100 * quartiles[1]:.1f}"
        f" / {100 * quartiles[2]:.1f}%, min {100 * min(with_neighbours):.1f}%; {_distribution(with_neighbours)}."
        f" Over the {len(distinct)} distinct gold queries: mean {100 * statistics.fmean(distinct):.2f}%.",
        "",
        "| predictions | scored | EX (%) | TS (%) | EX - TS (points) | EX-only s | EX+TS s |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {name} | {n} | {100 * ex:.2f} | {100 * ts:.2f} | {100 * (ex - ts):.2f} | {ex_s:.1f} | {ts_s:.1f} |"
            for name, n, ex, ts, ex_s, ts_s in results
        ),
        "",
        "Published EX - TS gaps on Spider dev range from about 3 to 12 points (Zhong, Yu and Klein 2020).",
        "",
    ]
    write_section(args.doc, SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
