"""``progress-sql inspect``: the suspicious high-reward samples of a rollout, eval or train run, each
with its reasons (the named checks of :mod:`progress_sql.evaluation.suspicious`), and a file of random matched
samples for human review (docs/training.md#inspecting-high-reward-samples)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from progress_sql.cli import _common as common
from progress_sql.data.introspect import read_profile
from progress_sql.data.tasks import resolve_task
from progress_sql.env.core import EnvConfig, make_store
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.evaluation.suspicious import (
    CHECKS,
    RUN_KINDS,
    Case,
    RunKind,
    counts,
    inspect_case,
    not_checkable,
    review_entry,
    tables_read,
)
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import example_from_fields
from progress_sql.progress import progress_bar
from progress_sql.runfolder import RUN_FILES, RunFolder, RunSummary, basic_report
from progress_sql.types import Example, plain

REVIEW_FILE = "review.md"
_SOURCE_HELP = f"A run folder of progress-sql {', '.join(RUN_KINDS)} (--out), or a rollout's samples.jsonl."


@dataclass(frozen=True, slots=True)
class RunEpisode:
    """One scored episode of a run, whatever its kind: its example, its turns (``TurnRecord`` dicts),
    its reward, the reward that scored it and the run's own test-suite verdict when it recorded one;
    ``label`` says where it came from (a training run's step and reward run)."""

    example: Example
    turns: tuple[Mapping[str, Any], ...]
    reward: float
    reward_name: str
    recorded_suite_match: bool | None = None
    label: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LoadedRun:
    """A run folder read for inspection: its kind, its episodes, and the settings its gold store needs."""

    kind: RunKind
    episodes: list[RunEpisode]
    total: int  # records in the run (scored or not)
    task: str | None
    data_dir: Path | None
    preset: str
    timeout_s: float
    suite: str | None  # the suite the run itself judged with
    recorded_suite: bool = False  # the episodes carry the run's own suite verdicts


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error}") from error
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _task_examples(task: str | None, data_dir: Path | None, db_root: str | None = None) -> dict[int, Example]:
    if task is None:
        raise ConfigError("the run names no task: give --task (and --data-dir)")
    return {e.index: e for e in resolve_task(task, data_dir, db_root=db_root)[1]}


def _reward_total(record: Mapping[str, Any]) -> float:
    return float((record.get("reward") or {}).get("total", 0.0))


def _read_rollout(folder: Path, records: list[dict[str, Any]], run: Mapping[str, Any], task: str | None,
                  data_dir: Path | None) -> LoadedRun:  # fmt: skip
    """``progress-sql rollout --out``: episode records with turns; the examples from the run's task."""
    if records and "turns" not in records[0]:
        raise ConfigError(f"{folder} holds no episode records (turns): not a rollout run")
    settings = run.get("settings", {})
    task = task or settings.get("task")
    data_dir = data_dir or (Path(settings["data_dir"]) if settings.get("data_dir") else None)
    examples = _task_examples(task, data_dir)
    reward_name = (settings.get("reward") or {}).get("name", "progressive")
    episodes = [RunEpisode(examples[int(r["index"])], tuple(r["turns"]), _reward_total(r), reward_name)
                for r in records if r.get("status") == "ok" and int(r["index"]) in examples]  # fmt: skip
    return LoadedRun("rollout", episodes, len(records), task, data_dir, settings.get("preset", "strict"),
                     float(settings.get("timeout_s", 30.0)), settings.get("suite"))  # fmt: skip


def _read_eval(folder: Path, records: list[dict[str, Any]], run: Mapping[str, Any], task: str | None,
               data_dir: Path | None) -> LoadedRun:  # fmt: skip
    """``progress-sql eval --out``: one answer per example (the only sample or the vote's choice); its
    matched answers are inspected, as one-turn episodes of reward 1, with the eval's own suite verdict."""
    settings = run.get("settings", {})
    spec = settings.get("task") or {}
    task = task or spec.get("name")
    data_dir = data_dir or (Path(settings["data_dir"]) if settings.get("data_dir") else None)
    examples = _task_examples(task, data_dir, spec.get("db_root"))
    episodes = []
    for record in records:
        if record.get("status") != "scored" or not record.get("match") or int(record["index"]) not in examples:
            continue
        turn = {"turn": 1, "sql": record.get("sql"), "format_ok": True, "exec_status": "ok", "match": True,
                "verdict": record.get("verdict"), "f": record.get("f_struct") or 0.0, "response": ""}  # fmt: skip
        recorded = record.get("ts_match") if int(record.get("ts_databases") or 0) > 0 else None
        episodes.append(RunEpisode(examples[int(record["index"])], (turn,), 1.0, "progressive", recorded))
    limits, preset = settings.get("limits") or {}, (settings.get("preset") or {}).get("name", "strict")
    return LoadedRun("eval", episodes, len(records), task, data_dir, preset, float(limits.get("timeout_s", 30.0)),
                     settings.get("suite"), recorded_suite=bool(settings.get("suite")))  # fmt: skip


def _read_train(folder: Path, records: list[dict[str, Any]], run: Mapping[str, Any], task: str | None,
                data_dir: Path | None) -> LoadedRun:  # fmt: skip
    """``progress-sql train --out``: the RL phases' episode logs (``rl/rollouts.jsonl``, and
    ``rl-<reward>/`` of a compared reward); each episode carries its example."""
    from progress_sql.training.rl import ROLLOUTS_FILE  # here: the training modules import TRL's adapter

    settings = run.get("settings", {})
    logs = sorted(folder.glob(f"rl*/{ROLLOUTS_FILE.removesuffix('.jsonl')}*.jsonl"))
    if not logs:
        raise ConfigError(f"{folder} is a train run without an episode log (rl/{ROLLOUTS_FILE}): train it again "
                          "with this version to inspect its rollouts")  # fmt: skip
    episodes, total = [], 0
    for log in logs:
        run_reward = log.parent.name.removeprefix("rl-") if log.parent.name != "rl" else settings.get("reward")
        for record in _lines(log):
            total += 1
            if record.get("status") != "ok":
                continue
            example = example_from_fields(record["example"], where=str(log))
            episodes.append(RunEpisode(example, tuple(record["turns"]), _reward_total(record),
                                       str(run_reward or "progressive"),
                                       label={"step": record.get("step"), "run_reward": run_reward}))  # fmt: skip
    return LoadedRun("train", episodes, total, task or settings.get("task"), data_dir, "strict",
                     float(settings.get("rollout_timeout") or 30.0), settings.get("suite"))  # fmt: skip


Reader = Callable[[Path, list[dict[str, Any]], Mapping[str, Any], str | None, Path | None], LoadedRun]
#: How each run kind is read (by the ``command`` of its summary.json).
READERS: dict[RunKind, Reader] = {"rollout": _read_rollout, "eval": _read_eval, "train": _read_train}


def load_run(source: Path, task: str | None = None, data_dir: Path | None = None) -> LoadedRun:
    """A run folder (or its ``samples.jsonl``) of any kind in :data:`READERS`; a ConfigError for a
    folder of another kind or none."""
    folder = source if source.is_dir() else source.parent
    run_folder = RunFolder(folder)
    if not run_folder.summary_path.is_file():
        raise ConfigError(f"no {RUN_FILES[0]} in {folder}: give the run folder of progress-sql "
                          f"{', '.join(RUN_KINDS)} (--out)")  # fmt: skip
    run = run_folder.read_summary()
    kind = run.get("command")
    if kind not in READERS:
        raise ConfigError(f"{folder} is a run folder of progress-sql {kind}: inspect reads the runs of "
                          f"{', '.join(RUN_KINDS)}")  # fmt: skip
    records_path = source if source.is_file() else run_folder.records_path
    records = _lines(records_path) if records_path.is_file() else []
    return READERS[kind](folder, records, run, task, data_dir)


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
    source: Path = typer.Argument(..., help=_SOURCE_HELP),
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
    """Flag suspicious high-reward samples of a rollout, eval or train run: hard-coded results, LIMIT
    guesses, suite failures."""
    if suite is not None and not suite.is_dir():
        raise ConfigError(f"--suite: test-suite folder not found: {suite} (build one with progress-sql build-suite)")
    loaded = load_run(source, task, data_dir)
    # the run's own suite judges again unless --suite names another; an eval's recorded verdicts need none
    judged_suite = (
        str(suite) if suite is not None else loaded.suite if loaded.suite and Path(loaded.suite).is_dir() else None
    )
    skipped = not_checkable(loaded.kind, suite=judged_suite is not None or loaded.recorded_suite)
    checks = {name: check for name, check in CHECKS.items() if name not in skipped}
    config = EnvConfig(preset=loaded.preset, timeout_s=loaded.timeout_s, suite=judged_suite)
    flagged_golds = _audit_findings(audit)
    chosen = sorted(loaded.episodes, key=lambda e: -e.reward)
    chosen = chosen if top is None else chosen[: max(0, top)]
    common.prepare_out(out)
    inspected, cases, rows = [], [], []
    with (
        ExecutionPool(workers=common.resolve_workers(workers)) as pool,
        make_store(config, pool=pool) as store,
        progress_bar("inspect", console=common.stderr) as bar,
    ):
        job = bar.add_task("episodes", total=len(chosen))
        for episode in chosen:
            example = episode.example
            case = Case(example, episode.turns, episode.reward, store.prepare(example).results[0], store,
                        episode.reward_name, audit_findings=flagged_golds.get((example.index, example.db_id), ()),
                        recorded_suite_match=episode.recorded_suite_match)  # fmt: skip
            cases.append(case)
            inspected.append(inspect_case(case, checks))
            rows.append({**plain(inspected[-1]), **episode.label})
            bar.advance(job)
        matched = [c for c in cases if c.matched_sql is not None]
        review = random.Random(seed).sample(matched, min(sample, len(matched))) if sample > 0 else []
        entries = [review_entry(c, _schema_excerpt(c.example.db_path, c.example.gold_sql),
                                store.run_pred(c.example, c.matched_sql or "")) for c in review]  # fmt: skip
    findings = [f for f in inspected if f.reasons]
    per_reason = counts(findings, skipped)
    results = {"kind": loaded.kind, "episodes": loaded.total, "inspected": len(chosen), "matched": len(matched),
               "flagged": len(findings), "per_reason": per_reason, "not_checkable": skipped,
               "review_samples": len(entries)}  # fmt: skip
    options = {"source": str(source), "kind": loaded.kind, "task": loaded.task,
               "data_dir": str(loaded.data_dir) if loaded.data_dir else None, "suite": judged_suite,
               "audit": str(audit) if audit else None, "top": top, "sample": sample, "seed": seed,
               "checks": list(checks)}  # fmt: skip
    summary = RunSummary("inspect", options, results)
    notes = [f"{f.db_id} #{f.index} (reward {f.reward:.3f}, `{f.matched_sql}`): "
             + "; ".join(f"{k}: {v}" for k, v in f.reasons.items()) for f in findings]  # fmt: skip
    notes += [f"{name}: {why}" for name, why in skipped.items()]
    report = basic_report(f"Inspect ({loaded.kind} run): {source}", summary.to_dict(), results=results, notes=notes)
    common.write_run(out, summary, rows, report)  # every inspected episode, flagged or not
    if entries:
        (out / REVIEW_FILE).write_text(f"# Review: {len(entries)} random matched samples (seed {seed})\n\n"
                                       + "\n".join(entries), encoding="utf-8")  # fmt: skip
    if as_json:
        typer.echo(json.dumps(summary.to_dict(), indent=2))
        return
    table = common.table(f"inspect ({loaded.kind} run): {len(findings)} of {len(chosen)} episodes flagged",
                         ["reason"], ["episodes"])  # fmt: skip
    for name, n in per_reason.items():
        table.add_row(name, str(n))
    common.stdout.print(table)
    common.stdout.print(f"wrote {out / 'samples.jsonl'}, {out / 'summary.json'} and {out / 'report.md'}")


def register(app: typer.Typer) -> None:
    common.add_command(app, "inspect", inspect_command)
