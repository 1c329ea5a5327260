"""Wall time of a full Spider dev evaluation of one prediction file: EX, hardness, ODT analysis, report.

Measures, on Spider dev (the 972 questions with a database) and one published system's predictions
(``../shared/data/predictions/spider-dev/model_K.txt``), with the ``spider`` preset:

* **command**: ``progress-sql eval ... --workers W`` as a user runs it (a fresh process: imports,
  worker start-up, gold and predicted queries, hardness, ODT analysis, summary, report and plots);
* in one process, after one warm-up of the workers: **EX only** (``_baseline.score``, the baseline: the
  first eval command's work), **full** (``harness.evaluate``: EX plus hardness and ODT tags per
  example), **metrics** (``summarize_eval``) and **plots** (three PNGs); the gold cache starts empty
  in each timed pass.

    .venv/bin/python bench/eval.py [--model K] [--workers W] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from _baseline import score
from _common import ROOT, add_output_options, command_line, machine, provenance, write_section
from progress_sql.data.tasks import resolve_task
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.evaluation.metrics import summarize_eval
from progress_sql.evaluation.predictions import load_predictions
from progress_sql.evaluation.report import write_plots
from progress_sql.execution.cache import GoldCache
from progress_sql.execution.compare import get_preset
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.gold import GoldStore
from progress_sql.execution.pool import ExecutionPool

SECTION = "## Evaluation"


def timed(run: object, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", type=int, default=1, help="which published system's predictions (1..5)")
    parser.add_argument("--workers", type=int, default=2, help="execution worker processes")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per query")
    parser.add_argument("--repeat", type=int, default=3, help="timed repeats (median)")
    add_output_options(parser)
    args = parser.parse_args(argv)
    spider = args.data_dir / "spider"
    predictions_file = args.data_dir / "predictions" / "spider-dev" / f"model_{args.model}.txt"
    if not (spider / "dev.json").is_file() or not predictions_file.is_file():
        print(f"error: {spider}/dev.json or {predictions_file} not found (needs ../shared/data)", file=sys.stderr)
        return 1
    info = machine()
    examples = resolve_task("spider-dev", spider)[1]
    predictions = load_predictions(predictions_file, len(examples))
    preset = get_preset("spider")
    limits = ExecLimits(timeout_s=args.timeout)

    command = [str(ROOT / ".venv" / "bin" / "progress-sql"), "eval", "--task", "spider-dev", "--data-dir",
               str(spider), "--predictions", str(predictions_file), "--workers", str(args.workers),
               "--timeout", str(args.timeout)]  # fmt: skip
    command_times = []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run([*command, "--out", out, "--json"], check=True, capture_output=True, cwd=ROOT)
            command_times.append(time.perf_counter() - start)
    command_s = statistics.median(command_times)

    with ExecutionPool(workers=args.workers) as pool, tempfile.TemporaryDirectory() as plots_dir:

        def store() -> GoldStore:  # a fresh gold cache and store: every pass starts cold
            return GoldStore(preset, pool=pool, limits=limits, cache=GoldCache())

        score(examples, predictions, store())  # warm-up: start the workers
        ex_s, _ = timed(lambda: score(examples, predictions, store()), args.repeat)
        samples = [[Sample(sql)] for sql in predictions]
        full_s, records = timed(lambda: evaluate(examples, samples, store()), args.repeat)
        metrics_s, metrics = timed(lambda: summarize_eval(records), args.repeat)  # type: ignore[arg-type]
        summary = {"settings": {"task": {"name": "spider-dev"}}, "metrics": metrics}
        plots_s, _ = timed(lambda: write_plots(Path(plots_dir), summary, records), args.repeat)  # type: ignore[arg-type]
    accuracy = metrics["execution_accuracy"]  # type: ignore[index]

    rows = [
        ("`progress-sql eval` (fresh process, report and plots)", command_s),
        ("EX only: `_baseline.score` (baseline)", ex_s),
        ("full: `harness.evaluate` (EX + hardness + ODT tags)", full_s),
        ("metrics: `summarize_eval`", metrics_s),
        ("plots: three PNGs", plots_s),
    ]
    table = Table(title=f"Spider dev, model_{args.model}, {args.workers} worker(s), median of {args.repeat}")
    for column in ("what", "seconds", "x EX only"):
        table.add_column(column, justify="left" if column == "what" else "right")
    for name, seconds in rows:
        table.add_row(name, f"{seconds:.2f}", f"{seconds / ex_s:.2f}")
    console = Console(width=160)
    console.print(table)
    console.print(f"EX {100 * accuracy:.2f}% on {metrics['scored']} scored examples")  # type: ignore[index]

    if not args.no_doc:
        invocation = command_line("bench/eval.py", argv)
        lines = [
            SECTION,
            "",
            f"A full evaluation of one prediction file on Spider dev (published system {args.model}, 1,034 questions,",
            "972 with a database; `spider` preset): gold and predicted queries, EX, Spider hardness per example, the",
            "ODT analysis, summary, report and plots. The gold cache starts empty in every pass.",
            "",
            *provenance(invocation, info),
            "",
            f"| what ({args.workers} workers, {args.timeout:g} s per query, median of {args.repeat}) "
            "| seconds | x EX only |",
            "|---|---:|---:|",
            *(f"| {name} | {seconds:.2f} | {seconds / ex_s:.2f} |" for name, seconds in rows),
            "",
            f"EX {100 * accuracy:.2f}% ({metrics['matched']} of {metrics['scored']}), as the official evaluator.  ",  # type: ignore[index]
            "The fresh-process figure includes Python start-up, imports (sqlglot, matplotlib) and starting the",
            "worker processes; the in-process rows start with warm workers.",
            "",
        ]
        write_section(args.doc, SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
