"""``progress-sql rollout``: run the refinement environment over a dataset with a generation backend."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer

from progress_sql.backends.base import GenerationConfig
from progress_sql.backends.openai_compat import BackendError
from progress_sql.backends.registry import BACKENDS, make_backend
from progress_sql.cli import _common as common
from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.data.tasks import load_task
from progress_sql.env.core import FEEDBACK_LEVELS, EnvConfig, make_store
from progress_sql.env.rollout import DIGITS, run_rollouts, summarize_rollouts
from progress_sql.evaluation.run import engine_settings
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.progress import progress_bar
from progress_sql.rewards.registry import get_reward
from progress_sql.rewards.tasks import TaskTermsConfig
from progress_sql.runfolder import RunSummary, basic_report
from progress_sql.types import PREVIEW_ROWS, plain
from progress_sql.view.context import example_contexts, write_contexts


def rollout_command(
    task: str = common.task_option(),
    data_dir: Path | None = common.data_dir_option(),
    backend: str = typer.Option(..., "--backend", help=f"Generation backend: {', '.join(sorted(BACKENDS))}."),
    out: Path = common.out_dir_option(),
    turns: int = typer.Option(4, "--turns", help="Turn budget T."),
    base_url: str | None = typer.Option(None, "--base-url", help="openai: server URL, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="openai: model name; transformers: model folder."),
    replay: Path | None = typer.Option(None, "--replay", help="replay: JSONL file of scripted responses."),
    preset: str = common.preset_option("strict"),
    feedback: str = typer.Option("tags", "--feedback", help=f"Feedback level: {', '.join(FEEDBACK_LEVELS)}."),
    reward: str = typer.Option("progressive", "--reward", help="Reward name (see the reward registry)."),
    schema_profile: str = typer.Option("full", "--schema-profile", help=f"One of {', '.join(SCHEMA_PROFILES)}."),
    suite: Path | None = common.suite_option(),
    temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy."),
    max_tokens: int = typer.Option(1024, "--max-tokens", help="Tokens per turn."),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed passed to the backend."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N examples."),
    workers: int = common.workers_option(),
    timeout: float = common.timeout_option("rollout"),
    backend_db: str | None = common.backend_db_option(),
    offer_ask: bool = typer.Option(
        False, "--offer-ask", help="Offer the <ask> action in the prompt (docs/tasks.md; always accepted)."
    ),
    as_json: bool = common.json_option(),
    view: bool = common.view_option(),
) -> None:
    """Roll out the multi-turn environment (ODT feedback, progressive reward) over a dataset."""
    common.check_timeout(timeout)
    processes = common.resolve_workers(workers)
    examples = load_task(task, data_dir)
    if limit is not None:
        examples = examples[: max(0, limit)]
    config = EnvConfig(
        max_turns=turns,
        preset=preset,
        feedback=feedback,  # type: ignore[arg-type]
        reward=reward,
        schema_profile=schema_profile,  # type: ignore[arg-type]
        timeout_s=timeout,
        suite=None if suite is None else str(suite),
        backend_db=backend_db,
        tasks=TaskTermsConfig(offer_ask=offer_ask),
    )
    common.backend_engine(backend_db)
    generation = GenerationConfig(temperature=temperature, max_tokens=max_tokens, seed=seed)
    generator = make_backend(
        backend, base_url=base_url, model=model, replay=replay, api_key=os.environ.get("OPENAI_API_KEY")
    )
    common.prepare_out(out)
    with (
        ExecutionPool(workers=processes) as pool,
        progress_bar("rollout", console=common.stderr) as bar,
    ):
        job = bar.add_task("turns", total=len(examples) * turns)
        store = make_store(config, pool=pool, cache=GoldCache())
        try:
            records = run_rollouts(
                examples,
                generator,
                config,
                generation,
                pool,
                store=store,
                preview_rows=PREVIEW_ROWS,  # the first rows of both results, kept in samples.jsonl for reading
                progress=lambda n: bar.advance(job, n),
            )
        except BackendError as error:
            common.fail(f"generation failed: {error}")
        if view:  # the page's questions, gold SQL and schema excerpts; result rows are in the records: nothing runs
            last = {r.index: r.turns[-1].sql if r.turns else None for r in records}
            contexts = example_contexts(examples, last, records, store.schema)
    spec = get_reward(reward)
    metrics = summarize_rollouts(records, turns)
    settings = {
        "task": task,
        "data_dir": str(data_dir) if data_dir else None,
        "backend": backend,
        "model": model,
        "turns": turns,
        "preset": preset,
        "feedback": feedback,
        "schema_profile": schema_profile,
        "suite": str(suite) if suite else None,
        "reward": {"name": spec.name, "version": spec.version, "config_hash": config.progressive.config_hash},
        # The terms of clarifying questions and write checks (docs/environment.md), added to every episode.
        "task_terms": {"offer_ask": offer_ask, "config_hash": config.tasks.config_hash},
        "generation": {"temperature": temperature, "max_tokens": max_tokens, "seed": seed},
        "timeout_s": timeout,
        "workers": workers or None,
        "engine": None if backend_db is None else engine_settings(backend_db),
    }
    summary = RunSummary("rollout", settings, {"metrics": metrics})
    report = basic_report(f"Rollout: {task}", summary.to_dict(), results=metrics)
    common.write_run(out, summary, [plain(r, DIGITS) for r in records], report)
    if view:
        try:
            write_contexts(out, contexts)
        except OSError as error:
            common.fail(f"cannot write results to {out}: {error}")
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
    else:
        _print(task, metrics)
        common.stdout.print(f"wrote {out / 'samples.jsonl'}, {out / 'summary.json'} and {out / 'report.md'}")
    common.write_view(out, view, quiet=as_json)


def _print(task: str, metrics: dict[str, Any]) -> None:
    table = common.table(f"rollout: {task} ({metrics['scored']} scored)", ["metric"], ["value"])
    for k, share in metrics["success_by_turn"].items():
        table.add_row(f"success within {k} turn(s)", f"{100 * share:.1f}%")
    table.add_row("mean reward", f"{metrics['mean_reward']:.3f}")
    table.add_row("mean turns", f"{metrics['mean_turns']:.2f}")
    table.add_row("format rate", f"{100 * metrics['format_rate']:.1f}%")
    table.add_row("gold invalid / skipped", f"{metrics['gold_invalid']} / {metrics['skipped']}")
    for kind, block in metrics["by_kind"].items():
        if len(metrics["by_kind"]) > 1 or kind != "read":  # a run with write or ambiguous tasks
            cells = f"{100 * block['match_rate']:.1f}% / {block['mean_reward']:.3f} / {block['asks']}"
            table.add_row(f"{kind}: matched / mean reward / asks", cells)
    common.stdout.print(table)


def register(app: typer.Typer) -> None:
    common.add_command(app, "rollout", rollout_command)
