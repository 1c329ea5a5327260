"""``progress-sql eval``: execution accuracy of a prediction file under a named comparison preset.

Writes ``samples.jsonl`` (one record per example, with its ``index``, verdict and reason) and
``summary.json`` (settings with the preset and its options, versions, metrics) to ``--out``.
"""

from __future__ import annotations

import json
import platform
import sqlite3
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from progress_sql import __version__
from progress_sql.cli._common import fail, stdout
from progress_sql.data.tasks import load_task
from progress_sql.errors import ProgressSQLError
from progress_sql.evaluation.harness import SampleRecord, score, summarize
from progress_sql.evaluation.predictions import load_predictions
from progress_sql.execution.cache import GoldCache
from progress_sql.execution.compare import PRESETS, describe, get_preset
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool


def _versions() -> dict[str, str]:
    import sqlglot

    return {
        "progress_sql": __version__,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "sqlglot": str(getattr(sqlglot, "__version__", "unknown")),
    }


def eval_command(
    task: str = typer.Option(
        ..., "--task", help="A registered task (spider-dev, bird-dev) or a Spider-format questions file."
    ),
    data_dir: Path = typer.Option(None, "--data-dir", help="Folder in the benchmark's release layout."),
    predictions: Path = typer.Option(..., "--predictions", help="One SQL per line in dataset order, or JSONL."),
    preset: str = typer.Option("spider", "--preset", help=f"Comparison semantics: {', '.join(PRESETS)}."),
    out: Path = typer.Option(..., "--out", help="Folder for samples.jsonl and summary.json."),
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds per query (gold and prediction)."),
    workers: int = typer.Option(0, "--workers", help="Worker processes (0: one per core)."),
    cache_dir: Path = typer.Option(None, "--cache-dir", help="Keep gold results on disk here across runs."),
    keep_distinct: bool = typer.Option(False, "--keep-distinct", help="spider preset: do not strip DISTINCT."),
    json_output: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
) -> None:
    """Execution accuracy of a prediction file, with per-example verdicts."""
    if timeout <= 0:
        fail(f"--timeout must be > 0 seconds, got {timeout}")
    if workers < 0:
        fail(f"--workers must be >= 0, got {workers}")
    options: dict[str, Any] = {"keep_distinct": True} if keep_distinct else {}
    if keep_distinct and preset != "spider":
        fail("--keep-distinct applies to --preset spider only (the other presets keep DISTINCT)")
    try:
        chosen = get_preset(preset, **options)
        examples = load_task(task, data_dir)
        preds = load_predictions(predictions, len(examples))
    except ProgressSQLError as error:
        fail(str(error))
    limits = ExecLimits(timeout_s=timeout)
    present = sum(Path(e.db_path).is_file() for e in examples)
    started = time.perf_counter()
    cache = GoldCache(cache_dir)
    with (
        ExecutionPool(workers or None) as pool,
        Progress(
            TextColumn("[bold]eval[/] {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=stdout,
            transient=json_output,
            disable=json_output,
        ) as bar,
    ):
        # Gold queries (at most one or two per example; cache hits skip them), then predictions.
        total = present * 2
        job = bar.add_task(f"{chosen.name} on {task}", total=total)
        records = score(
            examples,
            preds,
            chosen,
            pool,
            limits=limits,
            cache=cache,
            progress=lambda n: bar.advance(job, n),
        )
        bar.update(job, completed=total)
    elapsed = time.perf_counter() - started
    metrics = summarize(records)
    summary = {
        "command": "eval",
        "settings": {
            "task": task,
            "data_dir": str(data_dir) if data_dir is not None else None,
            "predictions": str(predictions),
            "preset": describe(chosen),
            "limits": asdict(limits),
            "workers": workers or None,
            "cache_dir": str(cache_dir) if cache_dir is not None else None,
        },
        "versions": _versions(),
        "metrics": metrics,
        "notes": _notes(metrics),
        "gold_cache": {"hits": cache.hits, "misses": cache.misses},
        "elapsed_s": round(elapsed, 3),
    }
    _write(out, records, summary)
    if json_output:
        typer.echo(json.dumps(summary, indent=2))
    else:
        _print(metrics, out, chosen.name)


def _notes(metrics: dict[str, Any]) -> list[str]:
    notes = []
    if metrics["skipped"]:
        notes.append(
            f"{metrics['skipped']} examples skipped because their database file is absent; "
            "they are not counted in execution_accuracy"
        )
    if metrics["gold_invalid"]:
        notes.append(
            f"{metrics['gold_invalid']} examples have a gold query that failed or timed out; "
            "they are invalid, never a match, and left out of execution_accuracy"
        )
    return notes


def _write(out: Path, records: list[SampleRecord], summary: dict[str, Any]) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with (out / "samples.jsonl").open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(asdict(record), ensure_ascii=False) + "\n")
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        fail(f"cannot write results to {out}: {error}")


def _print(metrics: dict[str, Any], out: Path, preset: str) -> None:
    accuracy = metrics["execution_accuracy"]
    shown = "n/a" if accuracy is None else f"{100 * accuracy:.2f}%"
    stdout.print(
        f"execution accuracy ({preset}): [bold]{shown}[/] ({metrics['matched']} of {metrics['scored']} scored examples)"
    )
    if metrics["skipped"]:
        stdout.print(f"skipped (database absent): {metrics['skipped']}")
    if metrics["gold_invalid"]:
        stdout.print(f"invalid (gold query failed): {metrics['gold_invalid']}")
    stdout.print(f"results: {out / 'samples.jsonl'}, {out / 'summary.json'}")


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
