"""``progress-sql export``: training files for verl, SkyRL or TRL from a task or a mixture. ``--out`` is
a data file with its manifest beside it, not a run folder (``--report-dir DIR`` adds one); the files
and why: docs/export.md#what-is-written and docs/cli.md#run-folders."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from progress_sql.audit.filters import FILTER_SETS
from progress_sql.cli import _common as common
from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.export.build import (
    manifest_path,
)
from progress_sql.export.formats import FORMATS
from progress_sql.export.run import ExportRequest, run_export
from progress_sql.progress import phases, progress_bar

_QUESTIONS = typer.Option(None, "--questions", help="Another questions file for the task, relative to --data-dir.")
_PATH_MAP = typer.Option(
    [], "--db-path-map", help="OLD=NEW: write database paths under folder OLD as under NEW (repeatable)."
)
_FILTER_NAME = typer.Option(
    "rl-default", "--filter", help=f"Gold-audit data filter: {', '.join(FILTER_SETS)} (docs/audit.md)."
)
_REPORT_DIR = typer.Option(
    None, "--report-dir", help="Also write a run folder here: summary.json, samples.jsonl, report.md."
)
_SCHEMA_PROFILE = typer.Option(
    None, "--schema-profile", help=f"One of {', '.join(SCHEMA_PROFILES)} (default: the profile's)."
)
_OFFER_ASK = typer.Option(
    False,
    "--offer-ask",
    help="Offer the <ask> action in the system prompt; the rows say so (offer_ask), and the trainer's "
    "environment accepts it on them (docs/tasks.md). Off: only ambiguous questions accept it.",
)


def export_command(
    fmt_name: str = typer.Option(..., "--format", help=f"Trainer format: {', '.join(FORMATS)}."),
    out: Path = typer.Option(..., "--out", help="Output file: .parquet (verl, skyrl) or .jsonl (trl, skyrl)."),
    task: str | None = common.task_option(required=False),
    data_dir: Path | None = common.data_dir_option(),
    questions: str | None = _QUESTIONS,
    mix: Path | None = typer.Option(None, "--mix", help="JSON mixture spec (instead of --task); docs/export.md."),
    path_map: list[str] = _PATH_MAP,
    filter_name: str = _FILTER_NAME,
    schema_profile: str | None = _SCHEMA_PROFILE,
    profile: str = common.profile_option(),
    suite: Path | None = common.suite_option(),
    allow_eval_overlap: bool = common.allow_eval_overlap_option(),
    eval_data_dir: list[Path] = common.eval_data_dir_option(),
    workers: int = common.workers_option(),
    timeout: float = common.timeout_option("export"),
    report_dir: Path | None = _REPORT_DIR,
    backend_db: str | None = common.backend_db_option(),
    offer_ask: bool = _OFFER_ASK,
    as_json: bool = common.json_option(),
    ray: str | None = common.ray_option(),
    ray_databases: str = common.ray_databases_option(),
) -> None:
    """Write a training file in a trainer's own shape (verl parquet, SkyRL rows, TRL prompts)."""
    common.check_timeout(timeout)
    common.backend_engine(backend_db)
    options = locals()
    request = ExportRequest(
        **{name: options[name] for name in _REQUEST_OPTIONS}, fmt=fmt_name, timeout_s=timeout,
        eval_data_dirs=tuple(eval_data_dir), path_maps=tuple(path_map),
        processes=common.resolve_shard_workers(workers, ray),
    )  # fmt: skip
    with progress_bar("export", console=common.stderr) as bar:
        run = run_export(request, phases(bar))
    if as_json:
        typer.echo(json.dumps(run.manifest, indent=2))
        return
    summary = run.summary
    per_source = ", ".join(f"{name}: {n}" for name, n in summary.per_source.items())
    unverified = sum(summary.unverified.values())
    common.stdout.print(
        f"wrote {summary.rows} {summary.format} rows to {out} ({per_source}; {unverified} unverified; "
        f"filter {filter_name} dropped {run.dropped}); manifest {manifest_path(out)}"
    )


#: The options :class:`ExportRequest` takes as they are, by its field names.
_REQUEST_OPTIONS = (
    "out", "task", "data_dir", "questions", "mix", "filter_name", "schema_profile", "profile", "suite",
    "allow_eval_overlap", "workers", "report_dir", "backend_db", "offer_ask", "ray", "ray_databases",
)  # fmt: skip


def register(app: typer.Typer) -> None:
    common.add_command(app, "export", export_command)
