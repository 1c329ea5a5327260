"""Suspicious high-reward samples (seed 002, point 9: read the top-reward rollouts for false
positives the reward let through). Each reason is a named check in :data:`CHECKS`, a function of
one :class:`Case` that returns evidence (a short text) or None; :func:`inspect_case` runs them all.
The command is ``progress-sql inspect`` (docs/training.md#inspecting-high-reward-samples).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from progress_sql.judge.gold import GoldStore
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.rewards.registry import RewardContext, get_reward
from progress_sql.runfolder import RunKind
from progress_sql.sql.parse import ParseFailure, parse_sql
from progress_sql.types import NOT_ANSWERS, Example, ExecResult, Trajectory, Turn


@dataclass(frozen=True, slots=True)
class Case:
    """One scored episode and what the checks need: its example, its turns (``TurnRecord`` dicts as
    ``samples.jsonl`` holds them), its reward, the gold's prepared result, the store (to run a
    matched SQL on the suite) and the audit's findings on this gold (empty without an audit)."""

    example: Example
    turns: tuple[Mapping[str, Any], ...]
    reward: float
    gold: ExecResult
    store: GoldStore
    reward_name: str = "progressive"
    progressive: ProgressiveConfig = field(default_factory=ProgressiveConfig)
    audit_findings: tuple[str, ...] = ()
    #: The run's own test-suite verdict on the matched SQL (an eval run with ``--suite`` records it
    #: as ``ts_match``); None: not recorded, the store's suite (if any) judges.
    recorded_suite_match: bool | None = None

    @property
    def matched_sql(self) -> str | None:
        """The SQL of the turn that matched (None when no turn did)."""
        return next((str(t["sql"]) for t in self.turns if t.get("match") and t.get("sql")), None)


def _select(sql: str | None) -> exp.Select | None:
    tree = None if sql is None else parse_sql(sql)
    if tree is None or isinstance(tree, ParseFailure):
        return None
    return tree if isinstance(tree, exp.Select) else tree.find(exp.Select)


def _same_value(literal: exp.Literal, value: Any) -> bool:
    if literal.is_string:
        return isinstance(value, str) and literal.this == value
    try:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and float(literal.this) == float(value)
    except ValueError:
        return False


def hard_coded_literal(case: Case) -> str | None:
    """A literal in the matched SQL's SELECT list equal to the gold's single result value."""
    select = _select(case.matched_sql)
    rows = case.gold.rows
    if select is None or len(rows) != 1 or len(rows[0]) != 1:
        return None
    value = rows[0][0]
    for projection in select.expressions:
        for literal in projection.find_all(exp.Literal):
            if _same_value(literal, value):
                return f"the SELECT list holds {literal.sql()}, the gold's only value ({value!r})"
    return None


def no_from(case: Case) -> str | None:
    """A matched SQL that reads no table while the gold does."""
    sql = case.matched_sql
    if sql is None or _select(sql) is None or tables_read(sql) or not tables_read(case.example.gold_sql):
        return None
    return "the matching SQL reads no table (no FROM): it computes the answer without the database"


def limit_guess(case: Case) -> str | None:
    """A matched SQL with LIMIT and no ORDER BY where the gold orders: the row it keeps is scan order's."""
    select, gold = _select(case.matched_sql), _select(case.example.gold_sql)
    if select is None or gold is None or gold.args.get("order") is None:
        return None
    if select.args.get("limit") is not None and select.args.get("order") is None:  # sqlglot's arg names
        return f"LIMIT without ORDER BY ({select.args['limit'].sql()}) where the gold orders"
    return None


def suite_failure(case: Case) -> str | None:
    """A match on the original database that fails on the test suite: the run's recorded verdict
    (an eval run's ``ts_match``), else judged on the store's suite (``--suite`` or the run's)."""
    sql = case.matched_sql
    if sql is not None and case.recorded_suite_match is not None:
        return None if case.recorded_suite_match else "matched, but the run's own test-suite verdict is a mismatch"
    if sql is None or case.store.suite is None or not case.store.suite_databases(case.example):
        return None
    suite = case.store.suite_verdicts([(case.example, sql)])[0]
    if suite is None or suite.match:
        return None
    return "matches on the original database but not on every test-suite database"


def _honest_first_turn(case: Case, trajectory: Trajectory) -> float:
    """The honest-attempt level: the reward of the same trajectory had its first turn been an honest
    attempt (formatted, executable, not matching) that claims no progress, its alignment F equal to
    the last turn's. A broken first turn has no F of its own to progress from (the progressive
    reward's first-turn guard counts it so); one that pays more than this bought progress credit."""
    first = trajectory.turns[0]
    honest = Turn(first.sql or "SELECT 1", True, True, False, trajectory.turns[-1].f, first.response)
    context = RewardContext(case.example.gold_sql, progressive=case.progressive)
    return get_reward(case.reward_name).score(Trajectory((honest, *trajectory.turns[1:])), context).total


def sabotaged_first_turn(case: Case) -> str | None:
    """A first answer that is empty, unformatted or does not execute, in a trajectory that scores
    above what an honest (formatted, executable) first attempt would have earned. Only answers count:
    a probe or a clarifying question before them is no attempt (the reward skips it too)."""
    answers = [t for t in case.turns if t.get("action", "sql") not in NOT_ANSWERS]
    if len(answers) < 2:
        return None
    first = answers[0]
    problem = (
        "empty" if not first.get("sql") else "unformatted" if not first.get("format_ok")
        else "not executable" if first.get("exec_status") != "ok" else None
    )  # fmt: skip
    if problem is None:
        return None
    trajectory = Trajectory(
        tuple(
            Turn(t.get("sql"), bool(t.get("format_ok")), t.get("exec_status") == "ok", bool(t.get("match")),
                 float(t.get("f") or 0.0), str(t.get("response") or ""))
            for t in answers
        )
    )  # fmt: skip
    honest = _honest_first_turn(case, trajectory)
    if case.reward <= honest + 1e-9:
        return None
    return f"turn 1 is {problem}, yet the trajectory scores {case.reward:.3f} > {honest:.3f} (honest first turn)"


def bad_gold_reward(case: Case) -> str | None:
    """A reward earned through a gold that failed, returned nothing or only NULLs, or that the gold
    audit flagged (``--audit``)."""
    if case.reward <= 0:
        return None
    if case.audit_findings:
        return f"the gold audit flagged this gold ({', '.join(case.audit_findings)})"
    if case.matched_sql is not None and case.gold.status == "ok":
        if not case.gold.rows:
            return "matched an empty gold result"
        if all(value is None for row in case.gold.rows for value in row):
            return "matched a gold result of NULLs only"
    return None


Check = Callable[[Case], "str | None"]

#: Every reason, by name (the order of the report).
CHECKS: dict[str, Check] = {
    "suite_failure": suite_failure,
    "hard_coded_literal": hard_coded_literal,
    "no_from": no_from,
    "limit_guess": limit_guess,
    "sabotaged_first_turn": sabotaged_first_turn,
    "bad_gold_reward": bad_gold_reward,
}


NOT_CHECKABLE = "not checkable for this run kind"

#: Checks that need data a run kind does not record, and why (reported as not checkable, never as 0).
UNRECORDED: dict[RunKind, dict[str, str]] = {
    "rollout": {},
    "eval": {
        "sabotaged_first_turn": "an eval answer is one turn: there is no first turn and no reward to compare",
    },
    "eval-turns": {},
    "train": {},
}


def not_checkable(kind: RunKind, *, suite: bool) -> dict[str, str]:
    """The checks that cannot run on a run of ``kind`` (``suite``: a test suite is known, given or
    recorded by the run), each with the reason: :data:`NOT_CHECKABLE` for data the kind never records."""
    missing = {name: f"{NOT_CHECKABLE}: {why}" for name, why in UNRECORDED[kind].items()}
    if not suite:
        missing["suite_failure"] = "not checkable for this run: it recorded no test suite and none was given (--suite)"
    return missing


@dataclass(frozen=True, slots=True)
class InspectedEpisode:
    """An inspected episode: which checks fired, with their evidence (none: nothing suspicious)."""

    index: int
    db_id: str
    reward: float
    matched_sql: str | None
    reasons: dict[str, str]


def inspect_case(case: Case, checks: Mapping[str, Check] = CHECKS) -> InspectedEpisode:
    """Run every check; the InspectedEpisode's ``reasons`` are those that fired (empty: nothing suspicious)."""
    reasons = {name: evidence for name, check in checks.items() if (evidence := check(case)) is not None}
    return InspectedEpisode(case.example.index, case.example.db_id, round(case.reward, 6), case.matched_sql, reasons)


def review_entry(case: Case, schema: str, predicted: ExecResult | None, rows: int = 5) -> str:
    """One sample of the human review file: question, schema excerpt, gold, prediction, both results."""

    def shown(result: ExecResult | None) -> str:
        if result is None:
            return "(no SQL)"
        if result.status != "ok":
            return f"{result.status}: {result.error}"
        head = "\n".join(f"    {row!r}" for row in result.rows[:rows])
        more = f"\n    ... {len(result.rows) - rows} more rows" if len(result.rows) > rows else ""
        return f"{len(result.rows)} rows{':' if result.rows else ''}\n{head}{more}"

    example = case.example
    return "\n".join([
        f"## {example.db_id} #{example.index} (reward {case.reward:.3f})", "",
        f"**Question:** {example.question}", *([f"**Evidence:** {example.evidence}"] if example.evidence else []), "",
        "Schema excerpt:", "", "```sql", schema, "```", "",
        "Gold:", "", "```sql", example.gold_sql, "```", "", f"Gold result: {shown(case.gold)}", "",
        "Prediction:", "", "```sql", case.matched_sql or "", "```", "", f"Prediction result: {shown(predicted)}", "",
        "Verdict (reviewer): [ ] right  [ ] wrong  [ ] gold wrong  [ ] ambiguous", "",
    ])  # fmt: skip


def tables_read(sql: str) -> set[str]:
    """The lower-cased names of the tables ``sql`` reads (empty when it cannot be parsed)."""
    tree = parse_sql(sql)
    return set() if isinstance(tree, ParseFailure) else {t.name.lower() for t in tree.find_all(exp.Table)}


def counts(findings: Sequence[InspectedEpisode], skipped: Mapping[str, str] | None = None) -> dict[str, int | str]:
    """Flagged episodes per reason, every reason listed; a check in ``skipped`` (from
    :func:`not_checkable`) shows its reason instead of a count."""
    skipped = skipped or {}
    return {name: skipped.get(name) or sum(name in f.reasons for f in findings) for name in CHECKS}
