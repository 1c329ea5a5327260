"""How each task kind (docs/tasks.md) is judged, in one registry: what runs an answer, what makes a gold
unusable, what an answer's verdict is, whether a test suite applies and what a vote compares.

A read question and an ambiguous one (a question with slots the user may be asked about) are judged
alike: their answer is a query whose result the preset compares with the gold's. A write task's answer
is a script, run on a copy of its database with the task's probes, and its verdict is its checks. The
gold store (:mod:`progress_sql.judge.gold`) and the evaluation harness dispatch through
:func:`kind_rules`; nothing else branches on the kind to judge."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.write import write_job
from progress_sql.judge.compare import Preset, judge
from progress_sql.judge.write import judge_write, write_gold_problem
from progress_sql.types import Example, ExecResult, TaskKind, Verdict

#: The checks an answer passed of how many (write tasks; None for a query).
Checks = tuple[int, int] | None


class KindRule(Protocol):
    """The judging of one task kind."""

    @property
    def scripted(self) -> bool:
        """Whether the gold's result is a reference script's outcome (run on a copy, not cached)."""
        ...

    @property
    def suite(self) -> bool:
        """Whether a test suite's databases judge a match again (a write task's checks are its test cases)."""
        ...

    def answer_job(self, example: Example, sql: str, location: str, preset: Preset, limits: ExecLimits) -> ExecJob:
        """The job that runs an answer (``location``: where the example's queries run)."""
        ...

    def gold_problem(self, example: Example, results: Sequence[ExecResult]) -> str | None:
        """Why the gold's results cannot be judged against (None when they can)."""
        ...

    def verdict(
        self, example: Example, preset: Preset, gold: Sequence[ExecResult], result: ExecResult
    ) -> tuple[Verdict, Checks]:
        """An answer's verdict against the gold's results, and the checks it passed."""
        ...

    def vote_results(
        self, results: Sequence[ExecResult | None], verdicts: Sequence[Verdict | None]
    ) -> list[ExecResult | None]:
        """What a majority vote over samples compares."""
        ...


@dataclass(frozen=True, slots=True)
class QueryRule:
    """A question answered by a query (read and ambiguous tasks)."""

    scripted: bool = False
    suite: bool = True

    def answer_job(self, example: Example, sql: str, location: str, preset: Preset, limits: ExecLimits) -> ExecJob:
        return ExecJob(location, preset.prepare_pred(sql), limits)

    def gold_problem(self, example: Example, results: Sequence[ExecResult]) -> str | None:
        return gold_problem(results)

    def verdict(
        self, example: Example, preset: Preset, gold: Sequence[ExecResult], result: ExecResult
    ) -> tuple[Verdict, Checks]:
        return judge(preset, example.gold_sql, gold, result), None

    def vote_results(
        self, results: Sequence[ExecResult | None], verdicts: Sequence[Verdict | None]
    ) -> list[ExecResult | None]:
        return list(results)


@dataclass(frozen=True, slots=True)
class ScriptRule:
    """A write task: a script judged by its checks after it runs on a copy (docs/tasks.md#write-tasks)."""

    scripted: bool = True
    suite: bool = False

    def answer_job(self, example: Example, sql: str, location: str, preset: Preset, limits: ExecLimits) -> ExecJob:
        assert example.write is not None
        return write_job(example.db_path, sql, example.write, limits)

    def gold_problem(self, example: Example, results: Sequence[ExecResult]) -> str | None:
        assert example.write is not None
        return write_gold_problem(example.write, results[0])

    def verdict(
        self, example: Example, preset: Preset, gold: Sequence[ExecResult], result: ExecResult
    ) -> tuple[Verdict, Checks]:
        assert example.write is not None
        written = judge_write(example.write, gold[0], result)
        return written.verdict, (written.passed, written.total)

    def vote_results(
        self, results: Sequence[ExecResult | None], verdicts: Sequence[Verdict | None]
    ) -> list[ExecResult | None]:
        # a write's result is its checks: vote by which checks passed (the first sample among equals)
        return [None if v is None else ExecResult("ok", ("checks",), ((v.reason,),)) for v in verdicts]


def gold_problem(results: Sequence[ExecResult]) -> str | None:
    """Why a query's gold results cannot be judged against (None when they can)."""
    main = results[0]
    if main.status == "ok" and not main.truncated:
        return None
    problem = "exceeds the row cap" if main.truncated else f"{main.status}: {main.error}"
    return f"the gold query {problem}"


#: Every task kind's judging (``Example.kind``).
KIND_RULES: dict[TaskKind, KindRule] = {"read": QueryRule(), "ambiguous": QueryRule(), "write": ScriptRule()}


def kind_rules(example: Example) -> KindRule:
    """How ``example`` is judged."""
    return KIND_RULES[example.kind]
