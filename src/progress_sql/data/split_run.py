"""``split`` as a library call: :class:`SplitRequest` (what the command's options say) -> :func:`run_split`
(the examples of a task, a questions file or a mixture cut by database into schema-disjoint splits
(:mod:`progress_sql.data.splits`), each split's rows written as they are, a mixture spec per split, and
the run folder); docs/training.md#a-clean-rl-set."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.data.fingerprint import database_fingerprints
from progress_sql.data.splits import GROUP_BY, SplitPlan, parse_fractions, split_by_database
from progress_sql.errors import ConfigError
from progress_sql.runfolder import RunFolder, RunSummary, basic_report, prepared_folder, write_json, writing_results
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class SplitRequest:
    """One ``split`` run as its options give it."""

    out: Path
    task: str | None = None
    data_dir: Path | None = None
    questions: str | None = None
    mix: Path | None = None
    fractions: str = "train=0.8,validation=0.1,test=0.1"
    group_by: str = "fingerprint"
    seed: int = 0


@dataclass(frozen=True, slots=True)
class SplitRun:
    """A written split: the plan and the ``summary.json``."""

    plan: SplitPlan
    summary: RunSummary


def run_split(request: SplitRequest) -> SplitRun:
    """Cut the request's examples into splits and write the split files and the run folder."""
    task, data_dir, questions, mix = request.task, request.data_dir, request.questions, request.mix
    group_by, seed, out = request.group_by, request.seed, request.out
    if group_by not in GROUP_BY:
        raise ConfigError(f"--group-by must be one of {', '.join(GROUP_BY)}, got {group_by!r}")
    targets = parse_fractions(request.fractions)
    sources = _sources(task, data_dir, questions, mix)
    examples = [e for _, _, es in sources for e in es]
    paths = {e.db_id: e.db_path for e in examples}
    prints = database_fingerprints(paths) if group_by == "fingerprint" else {}
    plan = split_by_database(examples, targets, seed=seed, group_by=group_by, fingerprints=prints)
    prepared_folder(out)  # before the work starts: a bad path fails at once
    files = _write_split_files(out, plan, sources)
    parts = {p.name: {"target": p.target, "examples": p.examples, "share": p.share, "databases": list(p.databases),
                      "groups": len(p.groups)} for p in plan.splits}  # fmt: skip
    merged = [g for g in plan.groups if len(g.databases) > 1]
    results = {
        "examples": len(examples),
        "databases": len(paths),
        "fingerprinted": len(prints),
        "groups_of_several_databases": [list(g.databases) for g in merged],
        "splits": parts,
        "files": files,
    }
    settings = {"task": task, "data_dir": str(data_dir) if data_dir else None, "questions": questions,
                "mix": str(mix) if mix else None, "fractions": targets, "group_by": group_by, "seed": seed}  # fmt: skip
    summary = RunSummary("split", settings, results)
    records = [{"source": name, "index": e.index, "db_id": e.db_id, "fingerprint": prints.get(e.db_id),
                "split": plan.split_of(e)} for name, _, es in sources for e in es]  # fmt: skip
    notes = [f"{p.name}: {p.examples} examples ({100 * p.share:.1f}%, target {100 * p.target:.1f}%) on "
             f"{len(p.databases)} databases: {', '.join(p.databases)}" for p in plan.splits]  # fmt: skip
    report = basic_report("Schema-disjoint split", summary.to_dict(), results={"examples": len(examples),
                          "databases": len(paths), "splits": {k: {"examples": v["examples"], "share": v["share"]}
                          for k, v in parts.items()}}, notes=notes)  # fmt: skip
    with writing_results(out):
        RunFolder(out).write(summary, records, report)
    return SplitRun(plan, summary)


def _sources(
    task: str | None, data_dir: Path | None, questions: str | None, mix: Path | None
) -> list[tuple[str, dict[str, Any], list[Example]]]:
    """Per source: its name, how to load it again (a mixture source's keys), and its examples."""
    if (task is None) == (mix is None):
        raise ConfigError("give exactly one of --task or --mix")
    from progress_sql.data.mixture import load_sources, read_mixture_spec, sample_mixture
    from progress_sql.data.tasks import resolve_task

    if mix is not None:
        spec = read_mixture_spec(mix)
        mixture = sample_mixture(load_sources(spec), total=spec.total, seed=spec.seed)
        drawn: dict[str, list[Example]] = {s.name: [] for s in spec.sources}
        for item in mixture.items:
            drawn[item.source].append(item.example)
        return [(s.name, {"task": s.task, "data_dir": s.data_dir, "questions": s.questions}, drawn[s.name])
                for s in spec.sources]  # fmt: skip
    assert task is not None
    spec_task, examples = resolve_task(task, data_dir, questions=questions)
    name = Path(task).stem if spec_task.name == "spider-format" else spec_task.name
    return [(name, {"task": task, "data_dir": str(data_dir) if data_dir else None, "questions": questions}, examples)]


def _questions_file(source: dict[str, Any]) -> Path:
    """The questions file a source was read from (to copy its rows into the split files as they are)."""
    from progress_sql.data.tasks import TASKS

    task = source["task"]
    if task in TASKS:
        return Path(source["data_dir"] or ".") / (source["questions"] or TASKS[task].questions)
    return Path(task)


def _write_split_files(
    out: Path, plan: SplitPlan, sources: Sequence[tuple[str, dict[str, Any], list[Example]]]
) -> dict[str, Any]:
    """``<split>.<source>.json``: the source's own rows of that split, unchanged; ``<split>.mix.json``:
    a mixture spec taking all of them (``progress-sql export --mix``)."""
    from progress_sql.data.loaders import _read_json_list

    files: dict[str, Any] = {}
    for part in plan.splits:
        mix_sources = []
        for name, source, examples in sources:
            rows = _read_json_list(_questions_file(source))
            chosen = [rows[e.index] for e in examples if plan.split_of(e) == part.name]
            path = (out / f"{part.name}.{name}.json").absolute()
            path.write_text(json.dumps(chosen, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            registered = source["task"] != str(_questions_file(source))
            # absolute: a spec's data_dir is read relative to the spec's own folder, not to where split ran
            data_dir = str(Path(source["data_dir"]).resolve()) if source["data_dir"] else None
            entry = {"name": name, "count": "all", "data_dir": data_dir}
            mix_sources.append(entry | ({"task": source["task"], "questions": str(path)} if registered
                                        else {"task": str(path)}))  # fmt: skip
        mix_path = out / f"{part.name}.mix.json"
        write_json(mix_path, {"seed": 0, "sources": mix_sources})
        files[part.name] = str(mix_path)
    return files
