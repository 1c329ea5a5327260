"""Write tasks judged: a write prediction's outcome (:class:`~progress_sql.execution.write.WriteResult`:
the script's status and its probes) against the reference script's, check by check, under the task's
preset (docs/tasks.md#write-tasks); running the scripts is :mod:`progress_sql.execution.write`'s."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.write import WriteResult, quote_identifier, run_write, write_job
from progress_sql.judge.compare import Preset, get_preset, judge
from progress_sql.types import Example, ExecResult, Verdict, VerdictStatus, WriteSpec


@dataclass(frozen=True, slots=True)
class WriteVerdict:
    """A write prediction judged: the verdict (match = every check passed) and the checks passed."""

    verdict: Verdict
    passed: int
    total: int
    failed: tuple[str, ...] = ()

    @property
    def share(self) -> float:
        """The share of checks passed (0 when the task has none)."""
        return self.passed / self.total if self.total else 0.0


def write_gold_problem(spec: WriteSpec, reference: ExecResult) -> str | None:
    """Why the reference script's outcome cannot be judged against (None when it can)."""
    if not isinstance(reference, WriteResult) or reference.status != "ok":
        return f"the reference script failed: {reference.status}: {reference.error}"
    names = [check.name for check in spec.checks] + [f"table {t}" for t in spec.compare_tables]
    for name, probe in zip(names, reference.probes, strict=True):
        if probe.status != "ok" or probe.truncated:
            problem = "exceeds the row cap" if probe.truncated else f"{probe.status}: {probe.error}"
            return f"the check {name} {problem} after the reference script"
    return None


@cache
def _preset(name: str) -> Preset:
    return get_preset(name)


def judge_write(spec: WriteSpec, reference: ExecResult, pred: ExecResult) -> WriteVerdict:
    """Judge a write prediction: each check against its expected rows (or the reference state's
    result), each compared table against its contents after the reference script, under the
    task's preset. Match means every check passed."""
    preset = _preset(spec.preset)
    total = len(spec.checks) + len(spec.compare_tables)
    problem = write_gold_problem(spec, reference)
    if problem is not None:
        return WriteVerdict(Verdict(False, "gold_invalid", problem, preset.name), 0, total)
    assert isinstance(reference, WriteResult)
    if pred.status != "ok" or not isinstance(pred, WriteResult):
        status: VerdictStatus = "pred_timeout" if pred.status == "timeout" else "pred_error"
        return WriteVerdict(Verdict(False, status, pred.error or "the script failed", preset.name), 0, total)
    failed: list[str] = []
    for index, check in enumerate(spec.checks):
        gold = reference.probes[index]
        if check.expected is not None:
            gold = ExecResult("ok", columns=gold.columns, rows=check.expected)
        if not judge(preset, check.sql, [gold], pred.probes[index]).match:
            failed.append(check.name)
    for offset, table in enumerate(spec.compare_tables, start=len(spec.checks)):
        sql = f"SELECT * FROM {quote_identifier(table)}"
        if not judge(preset, sql, [reference.probes[offset]], pred.probes[offset]).match:
            failed.append(f"table {table}")
    passed = total - len(failed)
    match = not failed and total > 0
    reason = f"{passed} of {total} checks passed" + (f"; failed: {', '.join(failed)}" if failed else "")
    return WriteVerdict(
        Verdict(match, "match" if match else "mismatch", reason, preset.name), passed, total, tuple(failed)
    )


def reference_verdict(example: Example, limits: ExecLimits) -> WriteVerdict:
    """A write task's reference script (its gold) run on a copy of its database in this process (it is
    the task's own data, trusted like a gold query) and judged against itself: a match unless the
    reference fails or does not pass its own checks."""
    assert example.write is not None, "reference_verdict is for write tasks"
    reference = run_write(write_job(example.db_path, example.gold_sql, example.write, limits))
    return judge_write(example.write, reference, reference)


__all__ = ["WriteVerdict", "judge_write", "reference_verdict", "write_gold_problem"]
