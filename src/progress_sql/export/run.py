"""``export`` as a library call: :class:`ExportRequest` (what the command's options say) ->
:func:`run_export` (the examples of a task or a mixture through the leakage guard and the gold-audit
filter, the training file and its manifest, and with ``report_dir`` a run folder); docs/export.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from progress_sql.audit.filters import DroppedExample, apply_filter, write_dropped
from progress_sql.cluster.connect import joined_cluster
from progress_sql.cluster.shards import ShardRunner
from progress_sql.data.ddl import SCHEMA_PROFILES
from progress_sql.errors import ConfigError
from progress_sql.execution.engines import engine_settings
from progress_sql.export.build import (
    EXPORT_VERSION,
    ExportSummary,
    dropped_path,
    export_items,
    manifest_path,
    parse_path_map,
    write_export,
)
from progress_sql.export.card import card_plan, write_dataset_card
from progress_sql.export.formats import get_format
from progress_sql.profiles import DEFAULT_PROFILE, get_profile
from progress_sql.progress import Phase
from progress_sql.runfolder import RunFolder, RunSummary, basic_report, package_versions, write_json, writing_results
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class ExportRequest:
    """One ``export`` as its options give it: the examples (``task`` or ``mix``), the format and file,
    the filter, the rows' settings, where the checks run."""

    fmt: str
    out: Path
    task: str | None = None
    data_dir: Path | None = None
    questions: str | None = None
    mix: Path | None = None
    path_maps: tuple[str, ...] = ()  # OLD=NEW database path prefixes
    filter_name: str = "rl-default"
    #: None: the profile's (``profile``).
    schema_profile: str | None = None
    suite: Path | None = None
    allow_eval_overlap: bool = False
    eval_data_dirs: tuple[Path, ...] = ()
    workers: int = 0  # as given (0: one per core), recorded
    processes: int = 1  # resolved: processes here, or per shard on a cluster
    timeout_s: float = 5.0
    report_dir: Path | None = None
    backend_db: str | None = None
    offer_ask: bool = False
    ray: str | None = None
    ray_databases: str = "shared"
    #: The profile (``progress_sql.profiles``) whose schema profile the prompts use unless given.
    profile: str = DEFAULT_PROFILE


@dataclass(frozen=True, slots=True)
class ExportRun:
    """A written export: its summary, the manifest beside the file, and how many examples the filter dropped."""

    summary: ExportSummary
    manifest: dict[str, Any]
    dropped: int


def run_export(request: ExportRequest, phase: Phase) -> ExportRun:
    """Run ``export``: draw, guard, filter and write the training file and its manifest (and the run
    folder of ``report_dir``). A bad request raises ConfigError before anything runs."""
    fmt = get_format(request.fmt)
    out = request.out
    if fmt.name == "verl" and out.suffix != ".parquet":
        raise ConfigError(f"verl reads parquet: give --out a .parquet name, not {out.name}")
    profile = get_profile(request.profile)
    schema_profile = request.schema_profile or profile.schema_profile.value
    if schema_profile not in SCHEMA_PROFILES:
        raise ConfigError(f"--schema-profile must be one of {', '.join(SCHEMA_PROFILES)}")
    maps = [parse_path_map(text) for text in request.path_maps]
    suite = request.suite
    if suite is not None and not suite.is_dir():
        raise ConfigError(f"--suite: test-suite folder not found: {suite} (build one with progress-sql build-suite)")
    drawn, origin = _collect(
        request.task, request.data_dir, request.questions, request.mix,
        allow_eval_overlap=request.allow_eval_overlap, eval_data_dirs=request.eval_data_dirs,
    )  # fmt: skip
    present = [example for _, example in drawn if Path(example.db_path).is_file()]
    with joined_cluster(request.ray, request.ray_databases, request.workers) as cluster:
        kept, dropped = _apply_filter(
            present, request.filter_name, dropped_path(out), workers=request.processes, timeout_s=request.timeout_s,
            cluster=cluster,
        )  # fmt: skip
    keep = set(kept)
    every = drawn
    drawn = [(s, e) for s, e in drawn if e in keep or not Path(e.db_path).is_file()]
    advance = phase("rows", len(drawn))
    items = export_items(
        drawn, schema_profile=schema_profile, path_maps=maps, suite=None if suite is None else str(suite),
        on_item=lambda: advance(1), backend_db=request.backend_db, allow_ask=request.offer_ask,
    )  # fmt: skip
    backend_db = request.backend_db
    settings = {"profile": profile.settings(), "schema_profile": schema_profile,
                "db_path_maps": [f"{old}={new}" for old, new in maps],
                "suite": items[0].suite if items else None, "allow_eval_overlap": request.allow_eval_overlap,
                "engine": None if backend_db is None else engine_settings(backend_db),
                **({"offer_ask": True} if request.offer_ask else {})}  # fmt: skip
    summary = write_export(items, fmt, out, filter_name=request.filter_name, dropped=len(dropped), settings=settings)
    manifest = {
        "command": "export",
        **asdict(summary),
        "source": origin,
        "dropped_file": str(dropped_path(out)) if dropped else None,
        "export_version": EXPORT_VERSION,
        "versions": package_versions(),
        "card": card_plan(out.parent),
    }
    write_json(manifest_path(out), manifest)
    if manifest["card"]["written"]:  # after the manifest: the card describes every export in the folder
        write_dataset_card(out.parent)
    if request.report_dir is not None:
        _write_report_dir(request, settings, manifest, _example_records(every, keep, dropped))
    return ExportRun(summary, manifest, len(dropped))


def _write_report_dir(
    request: ExportRequest, settings: dict[str, Any], manifest: dict[str, Any], records: list[dict[str, Any]]
) -> None:
    """The run folder of ``--report-dir``: the options, the manifest's results, every drawn example."""
    assert request.report_dir is not None
    ray = {"ray": request.ray, "ray_databases": request.ray_databases} if request.ray is not None else {}
    options = {"format": get_format(request.fmt).name, "out": str(request.out), "filter": request.filter_name,
               "workers": request.workers or None, "timeout_s": request.timeout_s, **settings, **ray}  # fmt: skip
    results = {k: v for k, v in manifest.items() if k not in ("command", "settings", "versions")}
    run = RunSummary("export", options, results)
    report = basic_report(f"Export: {request.out.name}", run.to_dict(), results=results)
    with writing_results(request.report_dir):
        RunFolder(request.report_dir).write(run, records, report)


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
        from progress_sql.data.tasks import task_licence

        spec = read_mixture_spec(mix)
        mixture, decision = draw_mixture(spec, allow_eval_overlap=allow_eval_overlap, eval_data_dirs=eval_data_dirs)
        origin: dict[str, Any] = {
            "mixture": str(mix),
            "spec": asdict(spec),
            "drawn": mixture.counts,
            "available": mixture.available,
            "duplicates_removed": mixture.duplicates,
            "leakage": decision.to_dict(),
            "licences": {source.name: task_licence(source.task) for source in spec.sources},
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
              "leakage": decision.to_dict(), "licences": {name: spec_task.licence}}  # fmt: skip
    return drawn, origin
