"""``inspect`` as a library call: :class:`InspectRequest` (what the command's options say) ->
:func:`run_inspect` (a run's scored episodes, highest reward first, through the named checks of
:mod:`progress_sql.evaluation.suspicious`; a file of random matched samples for human review; the
run folder); docs/training.md#inspecting-high-reward-samples."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from progress_sql import jsonio
from progress_sql.data.introspect import read_profile
from progress_sql.env.core import make_store
from progress_sql.env.settings import env_config_from_profile
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.evaluation.suspicious import (
    CHECKS,
    Case,
    counts,
    inspect_case,
    not_checkable,
    review_entry,
    tables_read,
)
from progress_sql.execution.pool import ExecutionPool
from progress_sql.profiles import DEFAULT_PROFILE
from progress_sql.progress import Phase
from progress_sql.runfolder import RUN_FILES, RunFolder, RunSummary, basic_report, prepared_folder, writing_results
from progress_sql.runs.read import read_episodes
from progress_sql.types import plain

REVIEW_FILE = "review.md"


@dataclass(frozen=True, slots=True)
class InspectRequest:
    """One ``inspect`` run as its options give it."""

    source: Path  # a run folder, or a rollout's samples.jsonl
    out: Path
    task: str | None = None  # None: the run's own
    data_dir: Path | None = None
    suite: Path | None = None  # None: the run's own, when it is still there
    audit: Path | None = None  # a gold-audit run folder
    top: int | None = None  # only the N highest-reward episodes
    sample: int = 0  # random matched samples for review.md
    seed: int = 0
    workers: int = 1  # processes (resolved)


@dataclass(frozen=True, slots=True)
class InspectRun:
    """An inspected run: the ``summary.json`` written."""

    summary: RunSummary


def run_inspect(request: InspectRequest, phase: Phase) -> InspectRun:
    """Inspect the run of ``request.source`` and write the run folder (``review.md`` with ``sample``)."""
    suite = request.suite
    if suite is not None and not suite.is_dir():
        raise ConfigError(f"--suite: test-suite folder not found: {suite} (build one with progress-sql build-suite)")
    loaded = read_episodes(request.source, request.task, request.data_dir)
    # the run's own suite judges again unless --suite names another; an eval's recorded verdicts need none
    judged_suite = (
        str(suite) if suite is not None else loaded.suite if loaded.suite and Path(loaded.suite).is_dir() else None
    )
    skipped = not_checkable(loaded.kind, suite=judged_suite is not None or loaded.recorded_suite)
    checks = {name: check for name, check in CHECKS.items() if name not in skipped}
    # the run's profile (its ODT diagnoses the answers again), with the run's own judging settings
    judging = {"preset": loaded.preset, "timeout_s": loaded.timeout_s, "suite": judged_suite}
    config = env_config_from_profile(loaded.profile or DEFAULT_PROFILE, judging)
    flagged_golds = _audit_findings(request.audit)
    chosen = sorted(loaded.episodes, key=lambda e: -e.reward)
    chosen = chosen if request.top is None else chosen[: max(0, request.top)]
    out = request.out
    prepared_folder(out)  # before the work starts: a bad path fails at once
    inspected, cases, rows = [], [], []
    with ExecutionPool(workers=request.workers) as pool, make_store(config, pool=pool) as store:
        advance = phase("episodes", len(chosen))
        for episode in chosen:
            example = episode.example
            case = Case(example, episode.turns, episode.reward, store.prepare(example).results[0], store,
                        episode.reward_name, audit_findings=flagged_golds.get((example.index, example.db_id), ()),
                        recorded_suite_match=episode.recorded_suite_match)  # fmt: skip
            cases.append(case)
            inspected.append(inspect_case(case, checks))
            rows.append({**plain(inspected[-1]), **episode.label})
            advance(1)
        matched = [c for c in cases if c.matched_sql is not None]
        sample = request.sample
        review = random.Random(request.seed).sample(matched, min(sample, len(matched))) if sample > 0 else []
        entries = [review_entry(c, _schema_excerpt(c.example.db_path, c.example.gold_sql),
                                store.run_pred(c.example, c.matched_sql or "")) for c in review]  # fmt: skip
    findings = [f for f in inspected if f.reasons]
    per_reason = counts(findings, skipped)
    results = {"kind": loaded.kind, "profile": loaded.profile,
               "episodes": loaded.total, "inspected": len(chosen), "matched": len(matched),
               "flagged": len(findings), "per_reason": per_reason, "not_checkable": skipped,
               "review_samples": len(entries)}  # fmt: skip
    options = {"source": str(request.source), "kind": loaded.kind, "task": loaded.task,
               "data_dir": str(loaded.data_dir) if loaded.data_dir else None, "suite": judged_suite,
               "audit": str(request.audit) if request.audit else None, "top": request.top, "sample": sample,
               "seed": request.seed, "checks": list(checks)}  # fmt: skip
    summary = RunSummary("inspect", options, results)
    notes = [f"{f.db_id} #{f.index} (reward {f.reward:.3f}, `{f.matched_sql}`): "
             + "; ".join(f"{k}: {v}" for k, v in f.reasons.items()) for f in findings]  # fmt: skip
    notes += [f"{name}: {why}" for name, why in skipped.items()]
    report = basic_report(f"Inspect ({loaded.kind} run): {request.source}", summary.to_dict(), results=results,
                          notes=notes)  # fmt: skip
    with writing_results(out):
        if entries:  # before the summary, which comes last
            review_text = f"# Review: {len(entries)} random matched samples (seed {request.seed})\n\n" + "\n".join(
                entries
            )
            jsonio.write_atomic(out / REVIEW_FILE, (jsonio.escape_surrogates(review_text),))
        RunFolder(out).write(summary, rows, report)  # every inspected episode, flagged or not
    return InspectRun(summary)


def _audit_findings(audit: Path | None) -> dict[tuple[int, str], tuple[str, ...]]:
    """(index, db_id) -> the checks the gold audit fired (an audit run folder's samples.jsonl)."""
    if audit is None:
        return {}
    path = audit / RUN_FILES[1] if audit.is_dir() else audit
    found = {}
    for record in jsonio.read_json_lines(path, "--audit run", objects=True):
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
