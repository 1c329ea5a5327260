"""``progress-sql eval``: evaluate a model (a generation backend) or a prediction file on a task.

Greedy decoding (``--n 1 --temperature 0``, the default) or ``--n N`` samples with majority voting
by execution result and pass@k; EX, TS over ``--suite DIR``, valid-SQL and format rates, per-level
breakdowns (Spider hardness or BIRD difficulty) and the offline ODT error analysis. Writes
``samples.jsonl`` (one record per example), ``summary.json`` (settings, versions, metrics),
``report.md`` and plots to ``--out``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer

from progress_sql.backends.base import GenerationConfig
from progress_sql.backends.registry import BACKENDS, make_backend
from progress_sql.cli._common import fail, stdout, versions, write_json
from progress_sql.data.ddl import SCHEMA_PROFILES, SchemaProfile, db_details
from progress_sql.data.tasks import Task, resolve_task
from progress_sql.errors import ProgressSQLError
from progress_sql.evaluation.analysis import odt_config_version
from progress_sql.evaluation.harness import EvalRecord, Sample, evaluate
from progress_sql.evaluation.metrics import notes, summarize_eval
from progress_sql.evaluation.predictions import load_prediction_samples
from progress_sql.evaluation.report import render_report, write_plots
from progress_sql.execution.cache import GoldCache
from progress_sql.execution.compare import PRESETS, describe, get_preset
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.gold import GoldStore
from progress_sql.execution.pool import ExecutionPool
from progress_sql.progress import progress_bar
from progress_sql.prompts import initial_messages
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.sql.extract import extract
from progress_sql.testsuite.manifest import suite_lookup
from progress_sql.types import Example

#: Conversations sent to a backend per call (progress is reported between calls).
GENERATION_BATCH = 16


def _generate(
    examples: Sequence[Example],
    backend: Any,
    config: GenerationConfig,
    profile: SchemaProfile,
    advance: Any,
) -> list[list[Sample]]:
    """Prompt the backend for every example whose database is present (the rest get an empty list)."""
    samples: list[list[Sample]] = [[] for _ in examples]
    present = [i for i, e in enumerate(examples) if Path(e.db_path).is_file()]
    schemas: dict[str, str] = {}
    for start in range(0, len(present), GENERATION_BATCH):
        batch = present[start : start + GENERATION_BATCH]
        conversations = []
        for i in batch:
            example = examples[i]
            if example.db_path not in schemas:
                schemas[example.db_path] = db_details(example.db_path, profile)
            conversations.append(initial_messages(schemas[example.db_path], example.question, example.evidence))
        responses = backend.generate(conversations, config)
        for i, texts in zip(batch, responses, strict=True):
            found = [extract(text) for text in texts]
            samples[i] = [Sample(x.sql, text, x.format_ok) for x, text in zip(found, texts, strict=True)]
        advance(len(batch))
    return samples


def eval_command(
    task: str = typer.Option(
        ...,
        "--task",
        help="A registered task (spider-dev, bird-dev, spider-dk, ...) or a Spider-format questions file.",
    ),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Folder in the benchmark's release layout."),
    predictions: Path | None = typer.Option(
        None, "--predictions", help="One SQL per line in dataset order, or JSONL (with 'samples' for several)."
    ),
    backend: str | None = typer.Option(None, "--backend", help=f"Generation backend: {', '.join(sorted(BACKENDS))}."),
    base_url: str | None = typer.Option(None, "--base-url", help="openai: server URL, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="openai: model name; transformers: model folder."),
    replay: Path | None = typer.Option(None, "--replay", help="replay: JSONL file of scripted responses."),
    n: int = typer.Option(1, "--n", help="Samples per question (majority vote and pass@k when > 1)."),
    temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy decoding."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling threshold."),
    max_tokens: int = typer.Option(1024, "--max-tokens", help="Tokens per response."),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed passed to the backend."),
    schema_profile: str = typer.Option("full", "--schema-profile", help=f"One of {', '.join(SCHEMA_PROFILES)}."),
    suite: Path | None = typer.Option(None, "--suite", help="Test-suite folder: <db_id>/*.sqlite databases (TS)."),
    preset: str | None = typer.Option(
        None, "--preset", help=f"Comparison semantics ({', '.join(PRESETS)}); default: the task's."
    ),
    out: Path = typer.Option(..., "--out", help="Folder for samples.jsonl, summary.json, report.md and plots."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N examples."),
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds per query (gold and prediction)."),
    workers: int = typer.Option(0, "--workers", help="Worker processes (0: one per core)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Keep gold results on disk here across runs."),
    keep_distinct: bool = typer.Option(False, "--keep-distinct", help="spider preset: do not strip DISTINCT."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Draw the report's plots (needs matplotlib)."),
    json_output: bool = typer.Option(False, "--json", help="Print the summary as JSON on stdout."),
) -> None:
    """Evaluate a model or a prediction file: EX / TS, Vote@N, pass@k, difficulty levels, ODT errors."""
    if timeout <= 0:
        fail(f"--timeout must be > 0 seconds, got {timeout}")
    if workers < 0:
        fail(f"--workers must be >= 0, got {workers}")
    if (predictions is None) == (backend is None):
        fail("give exactly one of --predictions FILE and --backend NAME")
    if n < 1:
        fail(f"--n must be >= 1, got {n}")
    if schema_profile not in SCHEMA_PROFILES:
        fail(f"--schema-profile must be one of {', '.join(SCHEMA_PROFILES)}, got {schema_profile!r}")
    if suite is not None and not suite.is_dir():
        fail(f"suite folder not found: {suite} (expected <db_id>/*.sqlite databases)")
    try:
        spec, examples = resolve_task(task, data_dir)
        chosen_name = preset or spec.preset
        if keep_distinct and chosen_name != "spider":
            fail("--keep-distinct applies to --preset spider only (the other presets keep DISTINCT)")
        chosen = get_preset(chosen_name, **({"keep_distinct": True} if keep_distinct else {}))
        if limit is not None:
            examples = examples[: max(0, limit)]
        generation = GenerationConfig(n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
        generator = None
        sample_lists: list[list[Sample]] = []
        if predictions is not None:
            loaded = load_prediction_samples(predictions, len(resolve_task(task, data_dir)[1]))
            sample_lists = [[Sample(sql) for sql in loaded[e.index]] for e in examples]
        elif backend is not None:
            generator = make_backend(
                backend, base_url=base_url, model=model, replay=replay, api_key=os.environ.get("OPENAI_API_KEY")
            )
    except ProgressSQLError as error:
        fail(str(error))
    limits = ExecLimits(timeout_s=timeout)
    present = sum(Path(e.db_path).is_file() for e in examples)
    started = time.perf_counter()
    cache = GoldCache(cache_dir)
    with (
        ExecutionPool(workers or None) as pool,
        progress_bar("[bold]eval[/] {task.description}", console=stdout, quiet=json_output) as bar,
    ):
        if generator is not None:
            job = bar.add_task(f"generating with {backend}", total=present)
            try:
                sample_lists = _generate(
                    examples,
                    generator,
                    generation,
                    schema_profile,
                    lambda k: bar.advance(job, k),
                )
            except Exception as error:  # a backend failure (network, model) ends the run with its message
                fail(f"generation failed: {type(error).__name__}: {error}")
        total = present * (1 + n)
        job = bar.add_task(f"{chosen.name} on {spec.name}", total=total)
        store = GoldStore(
            chosen, pool=pool, limits=limits, cache=cache, suite=None if suite is None else suite_lookup(suite)
        )
        records = evaluate(
            examples,
            [items or [Sample(None)] for items in sample_lists],
            store,
            breakdown=spec.breakdown,
            progress=lambda k: bar.advance(job, k),
        )
        bar.update(job, completed=total)
    elapsed = time.perf_counter() - started
    summary = _summary(
        spec, task, data_dir, predictions, backend, model, generation, schema_profile, suite, chosen, limits,
        workers, cache, records, elapsed,
    )  # fmt: skip
    _write(out, records, summary, plots)
    if json_output:
        typer.echo(json.dumps(summary, indent=2))
    else:
        _print(summary["metrics"], out, chosen.name)


def _summary(
    spec: Task,
    task: str,
    data_dir: Path | None,
    predictions: Path | None,
    backend: str | None,
    model: str | None,
    generation: GenerationConfig,
    schema_profile: str,
    suite: Path | None,
    preset: Any,
    limits: ExecLimits,
    workers: int,
    cache: GoldCache,
    records: list[EvalRecord],
    elapsed: float,
) -> dict[str, Any]:
    metrics = summarize_eval(records)
    greedy = generation.n == 1 and generation.temperature == 0
    decoding: dict[str, Any] = {
        "mode": "greedy" if greedy else (f"vote@{generation.n}" if generation.n > 1 else "sampled"),
        "n": generation.n,
    }
    if backend is not None:
        decoding.update(
            temperature=generation.temperature, top_p=generation.top_p, max_tokens=generation.max_tokens,
            seed=generation.seed, schema_profile=schema_profile,
        )  # fmt: skip
    else:
        decoding["n"] = metrics["samples_per_example"]
        decoding["mode"] = "prediction file" if decoding["n"] == 1 else f"vote@{decoding['n']} (prediction file)"
    reward = ProgressiveConfig()
    summary: dict[str, Any] = {
        "command": "eval",
        "settings": {
            "task": {
                "name": spec.name if spec.name != "spider-format" else task,
                "spec": spec.name,
                "version": spec.version,
                "breakdown": spec.breakdown,
            },
            "data_dir": str(data_dir) if data_dir is not None else None,
            "source": f"predictions {predictions}"
            if predictions is not None
            else f"backend {backend} {model or ''}".strip(),
            "predictions": str(predictions) if predictions is not None else None,
            "backend": backend,
            "model": model,
            "decoding": decoding,
            "suite": str(suite) if suite is not None else None,
            "preset": describe(preset),
            "limits": asdict(limits),
            "workers": workers or None,
        },
        "versions": versions(),
        "odt_config_version": odt_config_version(),
        "reward_config": {"version": reward.VERSION, "config_hash": reward.config_hash},
        "metrics": metrics,
        "gold_cache": {"hits": cache.hits, "misses": cache.misses},
        "elapsed_s": round(elapsed, 3),
    }
    summary["notes"] = notes(metrics)
    return summary


def record_dict(record: EvalRecord) -> dict[str, Any]:
    """A samples.jsonl line."""
    return asdict(record)


def _write(out: Path, records: list[EvalRecord], summary: dict[str, Any], plots: bool) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with (out / "samples.jsonl").open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record_dict(record), ensure_ascii=False) + "\n")
        write_json(out / "summary.json", summary)
        drawn: list[str] = []
        problem = None
        if plots:
            try:
                drawn = [path.name for path in write_plots(out, summary, records)]
            except Exception as error:  # matplotlib absent or a drawing failure: the results still stand
                problem = f"{type(error).__name__}: {error}"
        (out / "report.md").write_text(render_report(summary, drawn, problem), encoding="utf-8")
    except OSError as error:
        fail(f"cannot write results to {out}: {error}")


def _print(metrics: dict[str, Any], out: Path, preset: str) -> None:
    accuracy = metrics["execution_accuracy"]
    shown = "n/a" if accuracy is None else f"{100 * accuracy:.2f}%"
    stdout.print(
        f"execution accuracy ({preset}): [bold]{shown}[/] ({metrics['matched']} of {metrics['scored']} scored examples)"
    )
    if metrics["ts_scored"]:
        stdout.print(
            f"test-suite accuracy: {100 * metrics['test_suite_accuracy']:.2f}% ({metrics['ts_scored']} examples; "
            f"EX - TS on them: {100 * metrics['ex_minus_ts']:.2f} points)"
        )
    for level, block in metrics["by_level"].items():
        value = block["execution_accuracy"]
        stdout.print(f"  {level}: {'n/a' if value is None else f'{100 * value:.2f}%'} of {block['scored']}")
    if metrics["skipped"]:
        stdout.print(f"skipped (database absent): {metrics['skipped']}")
    if metrics["gold_invalid"]:
        stdout.print(f"invalid (gold query failed): {metrics['gold_invalid']}")
    stdout.print(f"results: {out / 'samples.jsonl'}, {out / 'summary.json'}, {out / 'report.md'}")


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
