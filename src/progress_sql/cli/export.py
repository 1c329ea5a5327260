"""``progress-sql export``: training files for verl, SkyRL or TRL from a task or a mixture.

Writes ``OUT`` (the rows), ``<stem>.manifest.json`` beside it (counts per source, filter, format,
versions) and, when a data filter drops examples, ``<stem>.dropped.jsonl``. The filter runs on the
examples whose database is present (it executes their gold); the others pass through unverified.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer

from progress_sql.audit.filters import FILTER_SETS, apply_filter, write_dropped
from progress_sql.cli._common import fail, stderr, stdout, versions, write_json
from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.export.build import (
    EXPORT_VERSION,
    dropped_path,
    export_items,
    manifest_path,
    parse_path_map,
    write_export,
)
from progress_sql.export.formats import FORMATS, get_format
from progress_sql.progress import progress_bar
from progress_sql.types import Example


def _apply_filter(
    examples: Sequence[Example], name: str, dropped_file: Path, *, workers: int, timeout_s: float
) -> tuple[list[Example], int]:
    """The gold-audit data filter ``name`` (the implementation ``train`` uses): the kept examples
    and how many were dropped (written to ``dropped_file``). ``none`` keeps everything."""
    outcome = apply_filter(examples, name, workers=workers, timeout_s=timeout_s, progress=name != "none")
    if outcome.dropped:
        write_dropped(outcome, dropped_file)
    return list(outcome.kept), len(outcome.dropped)


def _collect(
    task: str | None, data_dir: Path | None, questions: str | None, mix: Path | None
) -> tuple[list[tuple[str, Example]], dict[str, Any]]:
    """``(source, example)`` pairs of one task or of a sampled mixture, and how they were chosen."""
    if (task is None) == (mix is None):
        raise ConfigError("give exactly one of --task or --mix")
    if mix is not None:
        from progress_sql.data.mixture import load_sources, read_mixture_spec, sample_mixture

        spec = read_mixture_spec(mix)
        mixture = sample_mixture(load_sources(spec), total=spec.total, seed=spec.seed)
        origin: dict[str, Any] = {
            "mixture": str(mix),
            "spec": asdict(spec),
            "drawn": mixture.counts,
            "available": mixture.available,
            "duplicates_removed": mixture.duplicates,
        }
        return [(d.source, d.example) for d in mixture.items], origin
    from progress_sql.data.tasks import resolve_task

    assert task is not None
    spec_task, examples = resolve_task(task, data_dir, questions=questions)
    name = Path(task).stem if spec_task.name == "spider-format" else spec_task.name  # as in a mixture spec
    origin = {"task": task, "data_dir": str(data_dir) if data_dir else None, "questions": questions}
    return [(name, example) for example in examples], origin


def register(app: typer.Typer) -> None:
    @app.command("export")
    def export_command(
        fmt_name: str = typer.Option(..., "--format", help=f"Trainer format: {', '.join(FORMATS)}."),
        out: Path = typer.Option(..., "--out", help="Output file: .parquet (verl, skyrl) or .jsonl (trl, skyrl)."),
        task: str | None = typer.Option(None, "--task", help="A registered task or a Spider-format questions file."),
        data_dir: Path | None = typer.Option(None, "--data-dir", help="Folder in the benchmark's release layout."),
        questions: str | None = typer.Option(
            None, "--questions", help="Another questions file for the task, relative to --data-dir."
        ),
        mix: Path | None = typer.Option(None, "--mix", help="JSON mixture spec (instead of --task); docs/export.md."),
        path_map: list[str] = typer.Option(
            [], "--db-path-map", help="OLD=NEW: write database paths under folder OLD as under NEW (repeatable)."
        ),
        filter_name: str = typer.Option(
            "rl-default", "--filter", help=f"Gold-audit data filter: {', '.join(FILTER_SETS)} (docs/audit.md)."
        ),
        schema_profile: str = typer.Option("full", "--schema-profile", help=f"One of {', '.join(SCHEMA_PROFILES)}."),
        workers: int = typer.Option(os.cpu_count() or 1, "--workers", help="Worker processes of the data filter."),
        timeout: float = typer.Option(10.0, "--timeout", help="Seconds per gold query in the data filter."),
        as_json: bool = typer.Option(False, "--json", help="Print the manifest to stdout."),
    ) -> None:
        """Write a training file in a trainer's own shape (verl parquet, SkyRL rows, TRL prompts)."""
        try:
            fmt = get_format(fmt_name)
            if fmt.name == "verl" and out.suffix != ".parquet":
                raise ConfigError(f"verl reads parquet: give --out a .parquet name, not {out.name}")
            if schema_profile not in SCHEMA_PROFILES:
                raise ConfigError(f"--schema-profile must be one of {', '.join(SCHEMA_PROFILES)}")
            maps = [parse_path_map(text) for text in path_map]
            drawn, origin = _collect(task, data_dir, questions, mix)
            present = [example for _, example in drawn if Path(example.db_path).is_file()]
            kept, dropped = _apply_filter(present, filter_name, dropped_path(out), workers=workers, timeout_s=timeout)
        except (ConfigError, DatasetError) as error:
            fail(str(error))
        keep = set(kept)
        drawn = [(s, e) for s, e in drawn if e in keep or not Path(e.db_path).is_file()]
        with progress_bar("export", console=stderr) as bar:
            job = bar.add_task("rows", total=len(drawn))
            items = export_items(drawn, schema_profile=schema_profile, path_maps=maps, on_item=lambda: bar.advance(job))
        try:
            settings = {"schema_profile": schema_profile, "db_path_maps": [f"{old}={new}" for old, new in maps]}
            summary = write_export(items, fmt, out, filter_name=filter_name, dropped=dropped, settings=settings)
        except ConfigError as error:
            fail(str(error))
        manifest = {
            "command": "export",
            **asdict(summary),
            "source": origin,
            "dropped_file": str(dropped_path(out)) if dropped else None,
            "export_version": EXPORT_VERSION,
            "versions": versions(),
        }
        write_json(manifest_path(out), manifest)
        if as_json:
            typer.echo(json.dumps(manifest, indent=2))
            return
        per_source = ", ".join(f"{name}: {n}" for name, n in summary.per_source.items())
        unverified = sum(summary.unverified.values())
        stdout.print(
            f"wrote {summary.rows} {fmt.name} rows to {out} ({per_source}; {unverified} unverified; "
            f"filter {filter_name} dropped {dropped}); manifest {manifest_path(out)}"
        )
