"""Execution benchmark: the isolated pool and the gold cache against a bare sqlite3 loop.

For each of the five Spider dev prediction files: a bare in-process loop (plain read-only sqlite3,
the same deadline through a progress handler, the same row cap) runs every gold and prediction;
then the EX-only ``_baseline.score`` with the ``spider`` preset runs them cold (empty gold cache) and
warm (gold cache filled), with 1 and 2 workers. Reports per-query overhead in milliseconds against
the bare loop, the warm-cache speed-up, and the whole-process time of ``progress-sql eval`` for one
file. Needs ../shared/data.

    .venv/bin/python bench/execution.py [--timeout 1.0] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _baseline import score
from progress_sql.data.tasks import load_task
from progress_sql.evaluation.predictions import load_predictions
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore, gold_results
from progress_sql.types import Example

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data"


def bare_run(db_path: str, sql: str, limits: ExecLimits) -> None:
    """What a careful script would do without our executor: same deadline, same row cap."""
    conn = sqlite3.connect(Path(db_path).resolve().as_uri() + "?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode(errors="replace")
    deadline = time.monotonic() + limits.timeout_s
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), limits.progress_steps)
    try:
        cursor = conn.execute(sql)
        cursor.fetchmany(limits.max_rows)
    except (sqlite3.Error, ValueError):
        pass
    finally:
        conn.close()


def bare_loop(examples: list[Example], predictions: list[str], limits: ExecLimits) -> tuple[float, int]:
    preset = get_preset("spider")
    started = time.perf_counter()
    count = 0
    for example in examples:
        for sql in (*preset.gold_queries(example.gold_sql), preset.prepare_pred(predictions[example.index])):
            bare_run(example.db_path, sql, limits)
            count += 1
    return time.perf_counter() - started, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"../shared/data not found: {DATA}")
    limits = ExecLimits(timeout_s=args.timeout)
    examples = load_task("spider-dev", DATA / "spider")
    present = [e for e in examples if Path(e.db_path).is_file()]
    preset = get_preset("spider")
    rows = []
    for workers in (1, 2):
        with ExecutionPool(workers=workers) as pool:
            pool.run_many([])  # nothing: workers start lazily on the first real batch, timed below
            for model in range(1, 6):
                predictions = load_predictions(
                    DATA / "predictions" / "spider-dev" / f"model_{model}.txt", len(examples)
                )
                bare_s, queries = bare_loop(present, predictions, limits) if workers == 1 else (float("nan"), 0)
                store = GoldStore(preset, pool=pool, limits=limits, cache=GoldCache())
                t0 = time.perf_counter()
                score(examples, predictions, store)
                cold_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                score(examples, predictions, store)
                warm_s = time.perf_counter() - t0
                # The gold phase alone, which is what the cache saves: cold (fresh cache) vs warm.
                fresh = GoldCache()
                t0 = time.perf_counter()
                gold_results(present, preset, pool, limits=limits, cache=fresh)
                gold_cold_s = time.perf_counter() - t0
                t0 = time.perf_counter()
                gold_results(present, preset, pool, limits=limits, cache=fresh)
                gold_warm_s = time.perf_counter() - t0
                rows.append(
                    {
                        "model": model,
                        "workers": workers,
                        "bare_s": bare_s,
                        "cold_s": cold_s,
                        "warm_s": warm_s,
                        "gold_cold_s": gold_cold_s,
                        "gold_warm_s": gold_warm_s,
                        "queries": queries or 2 * len(present),
                    }
                )
    bare = {r["model"]: r["bare_s"] for r in rows if r["workers"] == 1}
    header = (
        "model",
        "workers",
        "bare s",
        "cold s",
        "warm s",
        "overhead ms/query",
        "cold/warm",
        "gold cold/warm",
    )
    print(" ".join(f"{h:>{max(7, len(h))}}" for h in header))
    for r in rows:
        overhead = 1000 * (r["cold_s"] - bare[r["model"]]) / r["queries"]
        r["overhead_ms_per_query"] = overhead
        r["cache_speedup"] = r["cold_s"] / r["warm_s"]
        r["gold_cache_speedup"] = r["gold_cold_s"] / r["gold_warm_s"]
        cells = (
            r["model"],
            r["workers"],
            bare[r["model"]],
            r["cold_s"],
            r["warm_s"],
            overhead,
            r["cache_speedup"],
            r["gold_cache_speedup"],
        )
        widths = [max(7, len(h)) for h in header]
        print(
            " ".join(
                f"{c:>{w}.3f}" if isinstance(c, float) else f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)
            )
        )
    for workers in (1, 2):
        mine = [r for r in rows if r["workers"] == workers]
        overhead_ms = statistics.median(r["overhead_ms_per_query"] for r in mine)
        speedup = statistics.median(r["cache_speedup"] for r in mine)
        versus_bare = statistics.median(r["cold_s"] / bare[r["model"]] for r in mine)
        gold_speedup = statistics.median(r["gold_cache_speedup"] for r in mine)
        print(
            f"workers={workers}: median overhead {overhead_ms:.3f} ms/query, median cold/warm "
            f"{speedup:.2f}x (gold phase alone {gold_speedup:.1f}x), median cold/bare {versus_bare:.2f}x"
        )
    with tempfile.TemporaryDirectory() as out:
        command = [
            str(REPO / ".venv" / "bin" / "progress-sql"),
            "eval",
            "--task",
            "spider-dev",
            "--data-dir",
            str(DATA / "spider"),
            "--predictions",
            str(DATA / "predictions" / "spider-dev" / "model_1.txt"),
            "--preset",
            "spider",
            "--out",
            out,
            "--timeout",
            str(args.timeout),
            "--workers",
            "2",
            "--json",
        ]
        t0 = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        whole = time.perf_counter() - t0
    print(f"whole process: progress-sql eval on model_1.txt, 2 workers: {whole:.2f} s")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "eval_process_s": whole}, indent=2))


if __name__ == "__main__":
    main()
