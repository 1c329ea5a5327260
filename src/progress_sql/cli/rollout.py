"""``progress-sql rollout``: run the refinement environment over a dataset with a generation backend."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import typer

from progress_sql.backends.base import GenerationConfig
from progress_sql.backends.registry import BACKENDS
from progress_sql.cli import _common as common
from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.env.rollout import RolloutRequest, run_rollout
from progress_sql.env.settings import env_config_from_options
from progress_sql.judge.compare import PRESETS
from progress_sql.progress import phases, progress_bar
from progress_sql.rewards.tasks import TaskTermsConfig

_OFFER_ASK = typer.Option(
    False,
    "--offer-ask",
    help="Offer the <ask> action in the prompt (docs/tasks.md); off: the profile's (only ambiguous questions "
    "accept it).",
)


def _option(flag: str, help: str) -> Any:
    """An environment option: None (not given) leaves the profile's value (``--profile``)."""
    return typer.Option(None, flag, help=f"{help[:-1]} (default: the profile's).")


def rollout_command(
    task: str = common.task_option(),
    data_dir: Path | None = common.data_dir_option(),
    backend: str = typer.Option(..., "--backend", help=f"Generation backend: {', '.join(sorted(BACKENDS))}."),
    out: Path = common.out_dir_option(),
    turns: int | None = typer.Option(None, "--turns", help="Turn budget T (default: the profile's, 4)."),
    base_url: str | None = typer.Option(None, "--base-url", help="openai: server URL, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="openai: model name; transformers: model folder."),
    replay: Path | None = typer.Option(None, "--replay", help="replay: JSONL file of scripted responses."),
    profile: str = common.profile_option(),
    preset: str | None = _option("--preset", f"Comparison semantics: {', '.join(PRESETS)}."),
    feedback: str | None = common.feedback_option(),
    protocol: str | None = common.protocol_option(),
    reward: str | None = _option("--reward", "Reward name from the reward registry."),
    schema_profile: str | None = _option("--schema-profile", f"One of {', '.join(SCHEMA_PROFILES)}."),
    suite: Path | None = common.suite_option(),
    temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy."),
    max_tokens: int = typer.Option(1024, "--max-tokens", help="Tokens per turn."),
    seed: int | None = typer.Option(None, "--seed", help="Sampling seed passed to the backend."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N examples."),
    workers: int = common.workers_option(),
    timeout: float = common.timeout_option("rollout"),
    backend_db: str | None = common.backend_db_option(),
    offer_ask: bool = _OFFER_ASK,
    as_json: bool = common.json_option(),
    view: bool = common.view_option(),
) -> None:
    """Roll out the multi-turn environment (ODT feedback, progressive reward) over a dataset."""
    common.check_timeout(timeout)
    env = env_config_from_options(profile, {
        "max_turns": turns, "preset": preset, "feedback": feedback, "reward": reward, "schema_profile": schema_profile,
        "timeout_s": timeout, "suite": None if suite is None else str(suite), "backend_db": backend_db,
        "tasks": TaskTermsConfig(offer_ask=True) if offer_ask else None, "protocol": protocol,
    })  # fmt: skip
    common.backend_engine(backend_db)
    request = RolloutRequest(
        task, backend, common.prepare_out(out), env,
        GenerationConfig(temperature=temperature, max_tokens=max_tokens, seed=seed), data_dir=data_dir, profile=profile,
        base_url=base_url, model=model, replay=replay, api_key=os.environ.get("OPENAI_API_KEY"), limit=limit,
        workers=common.resolve_workers(workers), workers_given=workers, contexts=view,
    )  # fmt: skip
    with progress_bar("rollout", console=common.stderr) as bar:
        run = run_rollout(request, phases(bar))
    if as_json:
        typer.echo(json.dumps(run.summary.to_dict(), indent=2))
    else:
        _print(task, run.metrics)
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
