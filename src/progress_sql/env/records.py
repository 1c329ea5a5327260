"""``TurnRecord``: one model turn of an episode as plain data, the one shape every consumer writes
(docs/architecture.md, step 6); ``to_dict`` / ``from_dict`` are lossless (``digits`` rounds for
files meant for reading), :func:`trajectory_of` gives the trajectory a reward scores.

>>> record = TurnRecord(1, "<sql>SELECT 1</sql>", "SELECT 1", True, None, "ok", None, True, "match",
...                     0.9, 0.8, 0.85, ())
>>> TurnRecord.from_dict(record.to_dict()) == record
True
>>> trajectory_of([record]).k_star
1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from progress_sql.odt.tags import Finding
from progress_sql.types import NOT_ANSWERS, RewardBreakdown, Trajectory, Turn, plain


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """What one turn produced: the model's ``response``, what the environment observed of it, the
    ``feedback`` it was answered with (None on the episode's last turn) and the trajectory ``reward``
    (set on the last turn only). ``findings`` are the ODT ``tags`` with where in the query each was
    found (empty in records written before they were kept)."""

    turn: int
    response: str
    sql: str | None
    format_ok: bool
    format_problem: str | None
    exec_status: str
    exec_error: str | None
    match: bool
    verdict: str
    f_struct: float
    f_lex: float
    f: float
    tags: tuple[str, ...]
    feedback: str | None = None
    reward: RewardBreakdown | None = None
    #: ``sql`` (an answer) or ``ask`` (a clarifying question: ``question``, answered by the user with
    #: ``feedback``; ``slot`` is the labelled slot it addressed, None when none was open); under a probe
    #: protocol (``env/protocols.py``) also ``probe`` (exploratory SQL, observed, never judged) and
    #: ``invalid`` (neither tag, where the protocol observes it as no attempt).
    action: str = "sql"
    question: str | None = None
    slot: str | None = None
    #: For a write task's answer: the checks its script passed, of how many.
    checks_passed: int | None = None
    checks_total: int | None = None
    findings: tuple[Finding, ...] = ()
    #: Why the rollout ended the episode at this turn before the environment's own rule did (a completion
    #: token budget spent: ``TrlRollout.completion_budget``); None when the environment ended it or it goes on.
    stopped: str | None = None

    def as_turn(self) -> Turn:
        """The turn as the reward sees it (a timeout or a missing query is not executable)."""
        return Turn(self.sql, self.format_ok, self.exec_status == "ok", self.match, self.f, self.response)

    def to_dict(self, digits: int | None = None) -> dict[str, Any]:
        data: dict[str, Any] = plain(self, digits)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnRecord:
        """The record :meth:`to_dict` wrote; fields a reader may leave out (``response``, the
        errors, the partial scores, ``feedback``, ``reward``, ``findings``, ``stopped``) get their empty values."""
        reward, f = data.get("reward"), float(data["f"])
        return cls(
            turn=int(data.get("turn", 0)),
            response=str(data.get("response") or ""),
            sql=data.get("sql"),
            format_ok=bool(data["format_ok"]),
            format_problem=data.get("format_problem"),
            exec_status=str(data["exec_status"]),
            exec_error=data.get("exec_error"),
            match=bool(data["match"]),
            verdict=str(data.get("verdict", "")),
            f_struct=float(data.get("f_struct", f)),
            f_lex=float(data.get("f_lex", f)),
            f=f,
            tags=tuple(str(tag) for tag in data.get("tags") or ()),
            feedback=data.get("feedback"),
            reward=RewardBreakdown.from_dict(reward) if isinstance(reward, Mapping) else None,
            action=str(data.get("action") or "sql"),
            question=data.get("question"),
            slot=data.get("slot"),
            checks_passed=None if data.get("checks_passed") is None else int(data["checks_passed"]),
            checks_total=None if data.get("checks_total") is None else int(data["checks_total"]),
            findings=tuple(_finding(item) for item in data.get("findings") or ()),
            stopped=data.get("stopped"),
        )


#: What a reward scores for an episode that ended without any answer (it only asked): one turn
#: without SQL, as if the model had answered nothing (docs/tasks.md#an-episode-that-only-asks).
NO_ANSWER_TURN = Turn(sql=None, format_ok=False, executable=False, match=False, f=0.0, response="")


def answers_trajectory(answers: Sequence[Turn]) -> Trajectory:
    """The trajectory a reward scores from an episode's answers: those, or :data:`NO_ANSWER_TURN`
    when the episode asked and never answered."""
    return Trajectory(tuple(answers) if answers else (NO_ANSWER_TURN,))


def _finding(data: Any) -> Finding:
    """A finding as :meth:`TurnRecord.to_dict` writes it (``{"tag", "location"}``) or as its text (``TAG@where``)."""
    if isinstance(data, str):
        return Finding.parse(data)
    return Finding(str(data["tag"]), tuple(str(step) for step in data.get("location") or ()))


def trajectory_of(records: Sequence[TurnRecord]) -> Trajectory:
    """The trajectory that a reward scores, from an episode's records in turn order: its answers (a
    clarifying question or a probe is no answer; a question's terms are added by ``rewards/tasks.py``),
    or one turn without an answer when no turn answered (the same as the environment scores)."""
    if not records:
        return Trajectory(())
    return answers_trajectory([record.as_turn() for record in records if record.action not in NOT_ANSWERS])
