"""``progress-sql export``: training files for verl, SkyRL or TRL from a task or a mixture. ``--out`` is
a data file with its manifest beside it, not a run folder (``--report-dir DIR`` adds one); the files
and why: docs/export.md#what-is-written and docs/cli.md#run-folders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer

from progress_sql.audit.filters import FILTER_SETS, DroppedExample, apply_filter, write_dropped
from progress_sql.cli import _common as common
from progress_sql.cluster.shards import ShardRunner
from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.errors import ConfigError
from progress_sql.evaluation.run import engine_settings
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
from progress_sql.runfolder import RunSummary, basic_report, package_versions, write_json
from progress_sql.types import Example


def _apply_filter(
    examples: Sequence[Example],
    name: str,
    dropped_file: Path,
    *,
    workers: int,
    timeout_s: float,
    cluster: ShardRunner | None = None,
) -> tuple[list[Example], tuple[DroppedExample, ...]]:
    """The gold-audit data filter ``name`` (the implementation ``train`` uses): the kept examples
    and the dropped ones (written to ``dropped_file``). ``none`` keeps everything."""
    outcome = apply_filter(
        examples, name, workers=workers, timeout_s=timeout_s, progress=name != "none", cluster=cluster
    )
    if outcome.dropped:
        write_dropped(outcome, dropped_file)
    return list(outcome.kept), outcome.dropped


def _example_records(
    drawn: Sequence[tuple[str, Example]], keep: set[Example], dropped: Sequence[DroppedExample]
) -> list[dict[str, Any]]:
    """samples.jsonl of ``--report-dir``: every drawn example, exported or dropped (with the reasons)."""
    reasons = {(d.index, d.db_id, d.gold_sql): list(d.reasons) for d in dropped}
    records = []
    for source, example in drawn:
        verified = Path(example.db_path).is_file()
        exported = example in keep or not verified
        records.append(
            {
                "source": source,
                "index": example.index,
                "db_id": example.db_id,
                "status": "exported" if exported else "dropped",
                "verified": verified,
                "reasons": [] if exported else reasons.get((example.index, example.db_id, example.gold_sql), []),
            }
        )
    return records


def _collect(
    task: str | None,
    data_dir: Path | None,
    questions: str | None,
    mix: Path | None,
    *,
    allow_eval_overlap: bool = False,
    eval_data_dirs: Sequence[Path] = (),
) -> tuple[list[tuple[str, Example]], dict[str, Any]]:
    """``(source, example)`` pairs of one task or of a sampled mixture, and how they were chosen,
    through the leakage guard (its decision under ``leakage``)."""
    if (task is None) == (mix is None):
        raise ConfigError("give exactly one of --task or --mix")
    if mix is not None:
        from progress_sql.data.mixture import draw_mixture, read_mixture_spec

        spec = read_mixture_spec(mix)
        mixture, decision = draw_mixture(spec, allow_eval_overlap=allow_eval_overlap, eval_data_dirs=eval_data_dirs)
        origin: dict[str, Any] = {
            "mixture": str(mix),
            "spec": asdict(spec),
            "drawn": mixture.counts,
            "available": mixture.available,
            "duplicates_removed": mixture.duplicates,
            "leakage": decision.to_dict(),
        }
        return [(d.source, d.example) for d in mixture.items], origin
    from progress_sql.data.leakage import check_leakage
    from progress_sql.data.tasks import resolve_task

    assert task is not None
    spec_task, examples = resolve_task(task, data_dir, questions=questions)
    name = Path(task).stem if spec_task.name == "spider-format" else spec_task.name  # as in a mixture spec
    drawn = [(name, example) for example in examples]
    folders = [data_dir] if data_dir is not None else [Path(task).parent] if spec_task.name == "spider-format" else []
    decision = check_leakage(drawn, allow=allow_eval_overlap, eval_data_dirs=eval_data_dirs, extra_folders=folders)
    origin = {"task": task, "data_dir": str(data_dir) if data_dir else None, "questions": questions,
              "leakage": decision.to_dict()}  # fmt: skip
    return drawn, origin


def export_command(
    fmt_name: str = typer.Option(..., "--format", help=f"Trainer format: {', '.join(FORMATS)}."),
    out: Path = typer.Option(..., "--out", help="Output file: .parquet (verl, skyrl) or .jsonl (trl, skyrl)."),
    task: str | None = common.task_option(required=False),
    data_dir: Path | None = common.data_dir_option(),
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
    suite: Path | None = common.suite_option(),
    allow_eval_overlap: bool = common.allow_eval_overlap_option(),
    eval_data_dir: list[Path] = common.eval_data_dir_option(),
    workers: int = common.workers_option(),
    timeout: float = common.timeout_option("export"),
    report_dir: Path | None = typer.Option(
        None, "--report-dir", help="Also write a run folder here: summary.json, samples.jsonl, report.md."
    ),
    backend_db: str | None = common.backend_db_option(),
    offer_ask: bool = typer.Option(
        False, "--offer-ask", help="Offer the <ask> action in the system prompt (docs/tasks.md); off: as before."
    ),
    as_json: bool = common.json_option(),
    ray: str | None = common.ray_option(),
    ray_databases: str = common.ray_databases_option(),
) -> None:
    """Write a training file in a trainer's own shape (verl parquet, SkyRL rows, TRL prompts)."""
    common.check_timeout(timeout)
    common.backend_engine(backend_db)
    processes = common.resolve_shard_workers(workers, ray)
    fmt = get_format(fmt_name)
    if fmt.name == "verl" and out.suffix != ".parquet":
        raise ConfigError(f"verl reads parquet: give --out a .parquet name, not {out.name}")
    if schema_profile not in SCHEMA_PROFILES:
        raise ConfigError(f"--schema-profile must be one of {', '.join(SCHEMA_PROFILES)}")
    maps = [parse_path_map(text) for text in path_map]
    if suite is not None and not suite.is_dir():
        raise ConfigError(f"--suite: test-suite folder not found: {suite} (build one with progress-sql build-suite)")
    drawn, origin = _collect(
        task, data_dir, questions, mix, allow_eval_overlap=allow_eval_overlap, eval_data_dirs=eval_data_dir
    )
    present = [example for _, example in drawn if Path(example.db_path).is_file()]
    with common.cluster_for(ray, ray_databases, workers) as cluster:
        kept, dropped = _apply_filter(
            present, filter_name, dropped_path(out), workers=processes, timeout_s=timeout, cluster=cluster
        )
    keep = set(kept)
    every = drawn
    drawn = [(s, e) for s, e in drawn if e in keep or not Path(e.db_path).is_file()]
    with progress_bar("export", console=common.stderr) as bar:
        job = bar.add_task("rows", total=len(drawn))
        items = export_items(
            drawn,
            schema_profile=schema_profile,
            path_maps=maps,
            suite=None if suite is None else str(suite),
            on_item=lambda: bar.advance(job),
            backend_db=backend_db,
            allow_ask=offer_ask,
        )
    settings = {"schema_profile": schema_profile, "db_path_maps": [f"{old}={new}" for old, new in maps],
                "suite": items[0].suite if items else None, "allow_eval_overlap": allow_eval_overlap,
                "engine": None if backend_db is None else engine_settings(backend_db),
                **({"offer_ask": True} if offer_ask else {})}  # fmt: skip
    summary = write_export(items, fmt, out, filter_name=filter_name, dropped=len(dropped), settings=settings)
    manifest = {
        "command": "export",
        **asdict(summary),
        "source": origin,
        "dropped_file": str(dropped_path(out)) if dropped else None,
        "export_version": EXPORT_VERSION,
        "versions": package_versions(),
    }
    write_json(manifest_path(out), manifest)
    if report_dir is not None:
        options = {"format": fmt.name, "out": str(out), "filter": filter_name, "workers": workers or None,
                   "timeout_s": timeout, **settings,
                   **({"ray": ray, "ray_databases": ray_databases} if ray is not None else {})}  # fmt: skip
        results = {k: v for k, v in manifest.items() if k not in ("command", "settings", "versions")}
        run = RunSummary("export", options, results)
        report = basic_report(f"Export: {out.name}", run.to_dict(), results=results)
        common.write_run(report_dir, run, _example_records(every, keep, dropped), report)
    if as_json:
        typer.echo(json.dumps(manifest, indent=2))
        return
    per_source = ", ".join(f"{name}: {n}" for name, n in summary.per_source.items())
    unverified = sum(summary.unverified.values())
    common.stdout.print(
        f"wrote {summary.rows} {fmt.name} rows to {out} ({per_source}; {unverified} unverified; "
        f"filter {filter_name} dropped {len(dropped)}); manifest {manifest_path(out)}"
    )


def register(app: typer.Typer) -> None:
    common.add_command(app, "export", export_command)
