"""``progress-sql eval``: evaluate a model (a generation backend) or a prediction file on a task
(docs/evaluation.md); the run itself lives in :mod:`progress_sql.evaluation.run`."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from pathlib import Path
from typing import Any

import typer

from progress_sql.backends.base import GenerationConfig
from progress_sql.backends.registry import BACKENDS, make_backend
from progress_sql.cli import _common as common
from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.data.tasks import resolve_task
from progress_sql.evaluation.bird import BIRD_VES_REPEATS
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.evaluation.predictions import FORMATS, read_predictions
from progress_sql.evaluation.run import (
    EvalInputs,
    ShardedEval,
    evaluate_on_cluster,
    generate_samples,
    summarize_run,
    write_eval_run,
)
from progress_sql.evaluation.ves import measure_ves
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.analysis import AnalysisPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.odt.config import OdtConfig
from progress_sql.progress import progress_bar
from progress_sql.prompts import PROMPT_STYLES
from progress_sql.testsuite.manifest import suite_lookup
from progress_sql.types import PREVIEW_ROWS


def eval_command(
    task: str = common.task_option(),
    data_dir: Path | None = common.data_dir_option(),
    db_root: Path | None = typer.Option(
        None,
        "--db-root",
        help="The databases folder (<db_id>/<db_id>.sqlite), when not the task's own: for a questions file, "
        "<stem>_database/ beside it (Spider's test.json + test_database/) or else database/.",
    ),
    predictions: Path | None = typer.Option(
        None,
        "--predictions",
        help="A prediction file: one SQL per line, SQL<TAB>db_id lines, BIRD's JSON object, a JSON list or "
        "JSONL (with 'samples' for several); the format is detected unless --format names it.",
    ),
    prediction_format: str | None = typer.Option(
        None, "--format", help=f"The prediction file's format: {', '.join(FORMATS)} (default: detected)."
    ),
    backend: str | None = typer.Option(None, "--backend", help=f"Generation backend: {', '.join(sorted(BACKENDS))}."),
    base_url: str | None = typer.Option(None, "--base-url", help="openai: server URL, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="openai: model name; transformers: model folder."),
    replay: Path | None = typer.Option(None, "--replay", help="replay: JSONL file of scripted responses."),
    n: int = typer.Option(1, "--n", help="Samples per question (majority vote and pass@k when > 1)."),
    temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy decoding."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling threshold."),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", help="Tokens per response (default: the prompt style's, 1024 for paper, 128 for small)."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed passed to the backend."),
    sampling: str = typer.Option(
        "n",
        "--sampling",
        help="openai: 'n' asks for --n samples per request and draws what a server leaves out (it ignores or "
        "caps n) as separate requests; 'separate' sends one request per sample (servers that refuse n).",
    ),
    prompt: str = typer.Option(
        "paper", "--prompt", help=f"Prompt style: {', '.join(PROMPT_STYLES)} (docs/data.md#prompt-styles)."
    ),
    schema_profile: str | None = typer.Option(
        None, "--schema-profile", help=f"One of {', '.join(SCHEMA_PROFILES)} (default: the prompt style's)."
    ),
    suite: Path | None = typer.Option(None, "--suite", help="Test-suite folder: <db_id>/*.sqlite databases (TS)."),
    preset: str | None = common.preset_option(),
    out: Path = common.out_dir_option(also="plots"),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N examples."),
    timeout: float = common.timeout_option("eval"),
    workers: int = common.workers_option(),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Keep gold results on disk here across runs."),
    keep_distinct: bool = typer.Option(False, "--keep-distinct", help="spider preset: do not strip DISTINCT."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Draw the report's plots (needs matplotlib)."),
    bird_metrics: bool | None = typer.Option(
        None,
        "--bird-metrics/--no-bird-metrics",
        help="BIRD's EX by difficulty and Soft-F1 as its evaluators compute them (default: with --preset bird).",
    ),
    ves_repeats: int = typer.Option(
        0,
        "--ves-repeats",
        help=f"R-VES: time each correct answer and its gold this many times (BIRD uses {BIRD_VES_REPEATS}); "
        "0: no R-VES. The result depends on the machine.",
    ),
    backend_db: str | None = common.backend_db_option(),
    json_output: bool = common.json_option(),
    view: bool = common.view_option(),
    ray: str | None = common.ray_option(),
    ray_databases: str = common.ray_databases_option(),
) -> None:
    """Evaluate a model or a prediction file: EX / TS, Vote@N, pass@k, difficulty levels, ODT errors."""
    common.check_timeout(timeout)
    processes = common.resolve_shard_workers(workers, ray)
    if sampling not in ("n", "separate"):
        common.fail(f"--sampling must be 'n' or 'separate', got {sampling!r}")
    if (predictions is None) == (backend is None):
        common.fail("give exactly one of --predictions FILE and --backend NAME")
    if n < 1:
        common.fail(f"--n must be >= 1, got {n}")
    if ves_repeats < 0:
        common.fail(f"--ves-repeats must be >= 0, got {ves_repeats}")
    if prediction_format is not None and predictions is None:
        common.fail("--format applies to --predictions FILE only")
    if prompt not in PROMPT_STYLES:
        common.fail(f"--prompt must be one of {', '.join(PROMPT_STYLES)}, got {prompt!r}")
    style = PROMPT_STYLES[prompt]
    schema_profile = schema_profile or style.schema_profile
    max_tokens = max_tokens if max_tokens is not None else style.max_new_tokens
    if schema_profile not in SCHEMA_PROFILES:
        common.fail(f"--schema-profile must be one of {', '.join(SCHEMA_PROFILES)}, got {schema_profile!r}")
    if suite is not None and not suite.is_dir():
        common.fail(f"suite folder not found: {suite} (expected <db_id>/*.sqlite databases)")
    if db_root is not None and not db_root.is_dir():
        common.fail(f"databases folder not found: {db_root}")
    spec, examples = resolve_task(task, data_dir, db_root=db_root)
    chosen_name = preset or spec.preset
    if keep_distinct and chosen_name != "spider":
        common.fail("--keep-distinct applies to --preset spider only (the other presets keep DISTINCT)")
    chosen = get_preset(chosen_name, **({"keep_distinct": True} if keep_distinct else {}))
    with_bird = chosen.name == "bird" if bird_metrics is None else bird_metrics
    if ves_repeats and not with_bird:
        common.fail("--ves-repeats measures BIRD's R-VES: use it with --preset bird or --bird-metrics")
    # Read the whole file against every example (counts and db_ids) before anything runs or is written.
    loaded = (
        None if predictions is None else read_predictions(predictions, [e.db_id for e in examples], prediction_format)
    )
    if limit is not None:
        examples = examples[: max(0, limit)]
    inputs = EvalInputs(
        task=spec,
        task_argument=task,
        data_dir=data_dir,
        preset=chosen,
        limits=ExecLimits(timeout_s=timeout),
        workers=workers,
        predictions=predictions,
        backend=backend,
        model=model,
        generation=GenerationConfig(n=n, temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed),
        schema_profile=schema_profile,
        prompt=prompt,
        suite=suite,
        predictions_format=None if loaded is None else loaded.format,
        bird_metrics=with_bird,
        ves_repeats=ves_repeats,
        db_root=db_root,
        backend_db=backend_db,
    )
    engine = common.backend_engine(backend_db)
    if backend_db is not None and suite is not None:
        common.fail("--suite needs the SQLite files: it cannot be combined with --backend-db")
    if backend_db is not None and ray is not None:
        common.fail("--ray judges on the SQLite files: it cannot be combined with --backend-db")
    sample_lists: list[list[Sample]] = []
    generator = None
    if loaded is not None:
        sample_lists = [[Sample(sql) for sql in loaded.entries[e.index].samples] for e in examples]
    elif backend is not None:
        generator = make_backend(
            backend,
            base_url=base_url,
            model=model,
            replay=replay,
            api_key=os.environ.get("OPENAI_API_KEY"),
            sampling=sampling,
        )
    present = sum(Path(e.db_path).is_file() for e in examples)
    started = time.perf_counter()
    cache = GoldCache(cache_dir)
    gold_cache = None
    with (
        common.cluster_for(ray, ray_databases, workers) as cluster,
        ExecutionPool(processes) if cluster is None else contextlib.nullcontext() as pool,
        AnalysisPool(processes) if cluster is None else contextlib.nullcontext() as analysis,
        progress_bar("[bold]eval[/] {task.description}", console=common.stdout, quiet=json_output) as bar,
    ):
        if generator is not None:
            job = bar.add_task(f"generating with {backend}", total=present)
            try:
                sample_lists = generate_samples(
                    examples,
                    generator,
                    inputs.generation,
                    schema_profile,
                    lambda k: bar.advance(job, k),
                    db_engine=engine.display_name,
                    style=style,
                )
            except Exception as error:  # a backend failure (network, model) ends the run with its message
                common.fail(f"generation failed: {type(error).__name__}: {error}")
        answers = [items or [Sample(None)] for items in sample_lists]
        contexts = []
        if cluster is not None:  # judged on the cluster's nodes, shard by shard (progress: examples)
            job = bar.add_task(f"{chosen.name} on {spec.name}, on Ray", total=len(examples))
            sharded = ShardedEval(
                chosen, inputs.limits, processes, None if cache_dir is None else str(cache_dir),
                None if suite is None else str(suite), spec.breakdown, with_bird, ves_repeats, PREVIEW_ROWS,
            )  # fmt: skip
            records, gold_cache = evaluate_on_cluster(
                examples, answers, sharded, cluster, lambda k: bar.advance(job, k)
            )
            if view:  # the page's questions, gold SQL and schema excerpts (read here; nothing runs)
                from progress_sql.data.schema import read_schema
                from progress_sql.view.context import example_contexts  # only with the page

                schema_of = functools.cache(read_schema)  # each database's schema read once
                contexts = example_contexts(examples, {r.index: r.sql for r in records}, records, schema_of)
        else:
            assert isinstance(pool, ExecutionPool)
            total = present * (1 + n)
            job = bar.add_task(f"{chosen.name} on {spec.name}", total=total)
            store = GoldStore(
                chosen,
                pool=pool,
                limits=inputs.limits,
                cache=cache,
                suite=None if suite is None else suite_lookup(suite),
                backend_db=backend_db,
                odt=OdtConfig(dialect=engine.dialect, db_engine=engine.display_name),
                analysis=analysis,
            )
            records = evaluate(
                examples,
                answers,
                store,
                breakdown=spec.breakdown,
                progress=lambda k: bar.advance(job, k),
                with_soft_f1=with_bird,
                preview_rows=PREVIEW_ROWS,  # the first rows of both results, kept in samples.jsonl for reading
            )
            bar.update(job, completed=total)
            if ves_repeats:
                timed = sum(r.status == "scored" and r.match for r in records)
                job = bar.add_task(f"R-VES timing ({ves_repeats} repeats)", total=2 * ves_repeats * timed)
                records = measure_ves(examples, records, store, ves_repeats, lambda k: bar.advance(job, k))
            if view:  # the page's questions, gold SQL and schema excerpts; result rows are in the records: nothing runs
                from progress_sql.view.context import example_contexts  # only with the page

                contexts = example_contexts(examples, {r.index: r.sql for r in records}, records, store.schema)
    summary = summarize_run(
        inputs, records, gold_cache=gold_cache or {"hits": cache.hits, "misses": cache.misses},
        elapsed_s=time.perf_counter() - started, draws=None if generator is None else generator.draws,
    )  # fmt: skip
    try:
        write_eval_run(out, records, summary, plots=plots)
        if view:
            from progress_sql.view.context import write_contexts

            write_contexts(out, contexts)
    except OSError as error:
        common.fail(f"cannot write results to {out}: {error}")
    if json_output:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
    else:
        _print(summary.metrics, out, chosen.name)
    common.write_view(out, view, quiet=json_output)


def _print(metrics: Any, out: Path, preset: str) -> None:
    accuracy = metrics["execution_accuracy"]
    se = metrics.get("execution_accuracy_se")
    shown = "n/a" if accuracy is None else f"{100 * accuracy:.2f}%" + ("" if se is None else f" +- {100 * se:.2f}")
    common.stdout.print(
        f"execution accuracy ({preset}): [bold]{shown}[/] ({metrics['matched']} of {metrics['scored']} scored examples)"
    )
    if metrics["ts_scored"]:
        common.stdout.print(
            f"test-suite accuracy: {100 * metrics['test_suite_accuracy']:.2f}% ({metrics['ts_scored']} examples; "
            f"EX - TS on them: {100 * metrics['ex_minus_ts']:.2f} points)"
        )
    for level, block in metrics["by_level"].items():
        value = block["execution_accuracy"]
        common.stdout.print(f"  {level}: {'n/a' if value is None else f'{100 * value:.2f}%'} of {block['scored']}")
    bird = metrics.get("bird")
    if bird:
        for name, key in (("BIRD EX", "ex"), ("Soft-F1", "soft_f1"), ("R-VES (machine-dependent)", "r_ves")):
            if bird[key] is not None:
                cells = ", ".join(f"{level} {_percent(v)}" for level, v in bird[key].items())
                common.stdout.print(f"{name}: {cells}")
    if metrics["skipped"]:
        common.stdout.print(f"skipped (database absent): {metrics['skipped']}")
    if metrics["gold_invalid"]:
        common.stdout.print(f"invalid (gold query failed): {metrics['gold_invalid']}")
    common.stdout.print(f"results: {out / 'samples.jsonl'}, {out / 'summary.json'}, {out / 'report.md'}")


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def register(app: typer.Typer) -> None:
    common.add_command(app, "eval", eval_command)
