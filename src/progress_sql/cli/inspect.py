"""``progress-sql inspect``: the suspicious high-reward samples of a rollout run, each with its
reasons (the named checks of :mod:`progress_sql.evaluation.suspicious`), and a file of random matched
samples for human review (docs/training.md#inspecting-high-reward-samples)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import typer

from progress_sql.cli import _common as common
from progress_sql.data.introspect import read_profile
from progress_sql.data.tasks import load_task
from progress_sql.env.core import EnvConfig, make_store
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.evaluation.suspicious import CHECKS, Case, counts, inspect_case, review_entry, tables_read
from progress_sql.execution.pool import ExecutionPool
from progress_sql.progress import progress_bar
from progress_sql.runfolder import RUN_FILES, RunFolder, RunSummary, basic_report

REVIEW_FILE = "review.md"


def _records(source: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The episode records of a rollout run folder (or its samples.jsonl) and its summary.json."""
    folder = RunFolder(source if source.is_dir() else source.parent)
    records_path = source if source.is_file() else folder.records_path
    if not records_path.is_file():
        raise ConfigError(f"no {RUN_FILES[1]} in {source}: give a rollout run folder (progress-sql rollout --out)")
    records = [json.loads(line) for line in records_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    summary = folder.read_summary() if folder.summary_path.is_file() else {}
    if records and "turns" not in records[0]:
        raise ConfigError(f"{records_path} holds no episode records (turns): inspect reads rollout runs")
    return records, summary


def _audit_findings(audit: Path | None) -> dict[tuple[int, str], tuple[str, ...]]:
    """(index, db_id) -> the checks the gold audit fired (an audit run folder's samples.jsonl)."""
    if audit is None:
        return {}
    path = audit / RUN_FILES[1] if audit.is_dir() else audit
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ConfigError(f"--audit: cannot read {path}: {error}") from error
    found = {}
    for line in filter(str.strip, lines):
        record = json.loads(line)
        if record.get("fired"):
            found[(int(record["index"]), str(record["db_id"]))] = tuple(record["fired"])
    return found


def _schema_excerpt(db_path: str, gold_sql: str) -> str:
    """The CREATE statements of the tables the gold reads (all of them when it cannot be parsed)."""
    used = tables_read(gold_sql)
    try:
        tables = read_profile(db_path).tables
    except DatasetError as error:
        return f"-- {error}"
    chosen = [name for name in tables if not used or name in used]
    return "\n".join(f"-- {tables[name].name}({', '.join(c.name for c in tables[name].columns)})" for name in chosen)


def inspect_command(
    source: Path = typer.Argument(..., help="A rollout run folder (progress-sql rollout --out) or its samples.jsonl."),
    out: Path = common.out_dir_option(also="review.md with --sample"),
    task: str | None = common.task_option(required=False),
    data_dir: Path | None = common.data_dir_option(),
    suite: Path | None = common.suite_option(),
    audit: Path | None = typer.Option(None, "--audit", help="A gold-audit run folder: rewards on flagged golds."),
    top: int | None = typer.Option(None, "--top", help="Only the N highest-reward episodes (default: every one)."),
    sample: int = typer.Option(0, "--sample", help="Also write N random matched samples to review.md."),
    seed: int = typer.Option(0, "--seed", help="Seed of --sample."),
    workers: int = common.workers_option(),
    as_json: bool = common.json_option(),
) -> None:
    """Flag suspicious high-reward samples of a rollout: hard-coded results, LIMIT guesses, suite failures."""
    records, run = _records(source)
    settings_of_run = run.get("settings", {})
    task = task or settings_of_run.get("task")
    if task is None:
        raise ConfigError("the run names no task: give --task (and --data-dir)")
    folder = data_dir or (Path(settings_of_run["data_dir"]) if settings_of_run.get("data_dir") else None)
    examples = {e.index: e for e in load_task(task, folder)}
    reward_name = (settings_of_run.get("reward") or {}).get("name", "progressive")
    config = EnvConfig(preset=settings_of_run.get("preset", "strict"), reward=reward_name,
                       timeout_s=float(settings_of_run.get("timeout_s", 30.0)),
                       suite=None if suite is None else str(suite))  # fmt: skip
    flagged_golds = _audit_findings(audit)
    scored = [r for r in records if r.get("status") == "ok" and int(r["index"]) in examples]
    scored.sort(key=lambda r: -float((r.get("reward") or {}).get("total", 0.0)))
    chosen = scored if top is None else scored[: max(0, top)]
    common.prepare_out(out)
    inspected, cases = [], []
    with (
        ExecutionPool(workers=common.resolve_workers(workers)) as pool,
        make_store(config, pool=pool) as store,
        progress_bar("inspect", console=common.stderr) as bar,
    ):
        job = bar.add_task("episodes", total=len(chosen))
        for record in chosen:
            example = examples[int(record["index"])]
            case = Case(example, tuple(record["turns"]), float((record.get("reward") or {}).get("total", 0.0)),
                        store.prepare(example).results[0], store, reward_name,
                        audit_findings=flagged_golds.get((example.index, example.db_id), ()))  # fmt: skip
            cases.append(case)
            inspected.append(inspect_case(case))
            bar.advance(job)
        matched = [c for c in cases if c.matched_sql is not None]
        review = random.Random(seed).sample(matched, min(sample, len(matched))) if sample > 0 else []
        entries = [review_entry(c, _schema_excerpt(c.example.db_path, c.example.gold_sql),
                                store.run_pred(c.example, c.matched_sql or "")) for c in review]  # fmt: skip
    findings = [f for f in inspected if f.reasons]
    per_reason = counts(findings)
    results = {"episodes": len(records), "inspected": len(chosen), "matched": len(matched),
               "flagged": len(findings), "per_reason": per_reason, "review_samples": len(entries)}  # fmt: skip
    options = {"source": str(source), "task": task, "data_dir": str(folder) if folder else None,
               "suite": str(suite) if suite else None, "audit": str(audit) if audit else None, "top": top,
               "sample": sample, "seed": seed, "checks": list(CHECKS)}  # fmt: skip
    summary = RunSummary("inspect", options, results)
    notes = [f"{f.db_id} #{f.index} (reward {f.reward:.3f}, `{f.matched_sql}`): "
             + "; ".join(f"{k}: {v}" for k, v in f.reasons.items()) for f in findings]  # fmt: skip
    report = basic_report(f"Inspect: {source}", summary.to_dict(), results=results, notes=notes)
    common.write_run(out, summary, inspected, report)  # every inspected episode, flagged or not
    if entries:
        (out / REVIEW_FILE).write_text(f"# Review: {len(entries)} random matched samples (seed {seed})\n\n"
                                       + "\n".join(entries), encoding="utf-8")  # fmt: skip
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
        return
    table = common.table(f"inspect: {len(findings)} of {len(chosen)} episodes flagged", ["reason"], ["episodes"])
    for name, n in per_reason.items():
        table.add_row(name, str(n))
    common.stdout.print(table)
    common.stdout.print(f"wrote {out / 'samples.jsonl'}, {out / 'summary.json'} and {out / 'report.md'}")


def register(app: typer.Typer) -> None:
    common.add_command(app, "inspect", inspect_command)
