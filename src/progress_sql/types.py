"""Records shared by every layer: dataset examples, execution results, comparison verdicts, and the
turns, trajectories and reward breakdowns of the refinement loop; frozen values, passed around
without copying and without surprises."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, TypeVar

#: A value SQLite hands back: NULL, INTEGER, REAL, TEXT or BLOB.
SQLValue: TypeAlias = int | float | str | bytes | None
Row: TypeAlias = tuple[SQLValue, ...]

ExecStatus = Literal["ok", "error", "timeout"]


_Closing = TypeVar("_Closing", bound="Closing")


class Closing:
    """A resource that a ``with`` block closes: subclasses define :meth:`close`."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Closing) -> _Closing:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


#: What an example asks of the policy: answer a question with a query (``read``), change the database
#: with a DML script checked by queries on the resulting state (``write``), or answer an
#: underspecified question, where asking first pays (``ambiguous``); formats: docs/tasks.md.
TaskKind = Literal["read", "write", "ambiguous"]
#: Spider's hardness levels (sql/hardness.py computes them; reports and metrics only name them).
Hardness = Literal["easy", "medium", "hard", "extra"]
HARDNESS_LEVELS: tuple[Hardness, ...] = ("easy", "medium", "hard", "extra")
TASK_KINDS: tuple[TaskKind, ...] = ("read", "write", "ambiguous")
#: Statement kinds a write task may allow (anything else is refused before SQLite sees it).
WriteStatement = Literal["insert", "update", "delete", "replace"]


@dataclass(frozen=True, slots=True)
class WriteCheck:
    """One executable test case of a write task: ``sql`` (a query) runs on the database state after
    the script; it passes when its result equals ``expected`` under the task's preset (None: the
    result the same query gives after the reference script)."""

    name: str
    sql: str
    expected: tuple[Row, ...] | None = None


@dataclass(frozen=True, slots=True)
class WriteSpec:
    """What makes an example a write task: its gold SQL is the reference DML script; ``tables`` are
    the tables a script may write, ``statements`` the statement kinds it may use; ``checks`` run on
    the state after it, and each table of ``compare_tables`` must hold the same rows as after the
    reference script (under ``preset``)."""

    tables: tuple[str, ...]
    checks: tuple[WriteCheck, ...]
    statements: tuple[WriteStatement, ...] = ("insert", "update", "delete")
    compare_tables: tuple[str, ...] = ()
    preset: str = "strict"


@dataclass(frozen=True, slots=True)
class AmbiguitySlot:
    """One labelled underspecification of a question: ``missing`` says what the question leaves open,
    ``interpretation`` is the intended reading (what the simulated user answers), ``keywords`` are
    words a clarifying question must mention to address this slot (any one, case-insensitive), and
    ``questions`` are examples of acceptable clarifying questions."""

    name: str
    missing: str
    interpretation: str
    keywords: tuple[str, ...]
    questions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Example:
    """One benchmark question with its gold query and where its database lives.

    A write task carries ``write`` (its gold SQL is the reference DML script); an ambiguous
    question carries its labelled ``ambiguity`` slots (its gold SQL answers the intended reading)."""

    index: int
    question: str
    db_id: str
    db_path: str
    gold_sql: str
    evidence: str = ""
    difficulty: str | None = None
    write: WriteSpec | None = None
    ambiguity: tuple[AmbiguitySlot, ...] = ()

    @property
    def kind(self) -> TaskKind:
        """``write`` for a write task, ``ambiguous`` for a question with slots, else ``read``."""
        if self.write is not None:
            return "write"
        return "ambiguous" if self.ambiguity else "read"


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What running one SQL statement produced; model mistakes are a status, never an exception.

    ``truncated`` is True when the row or byte cap stopped fetching: ``rows`` then holds a prefix of
    the real result, and comparators never count such a result as a match. ``failed_outside`` is True
    for an error the statement did not cause (its worker died, the database or its server could not be
    reached, the connection was lost or another session cancelled it): not the query's own result, so
    it is never cached.
    """

    status: ExecStatus
    columns: tuple[str, ...] = ()
    rows: tuple[Row, ...] = ()
    error: str | None = None
    elapsed_s: float = 0.0
    truncated: bool = False
    failed_outside: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"


#: Rows of a result kept in a record for reading (the verdict itself is made on every row).
PREVIEW_ROWS = 5


@dataclass(frozen=True, slots=True)
class ResultPreview:
    """The first rows of one :class:`ExecResult`, as a record keeps them for reading (the run
    explorer shows them); ``row_count`` counts every fetched row (None when the statement failed)."""

    status: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    row_count: int | None
    truncated: bool
    error: str | None

    @classmethod
    def of(cls, result: ExecResult, rows: int = PREVIEW_ROWS) -> ResultPreview:
        """The first ``rows`` rows of ``result``, cells as JSON carries them (bytes and non-finite floats as text).

        >>> kept = ResultPreview.of(ExecResult("ok", ("a",), ((1,), (b"xy",), (3,))), rows=2)
        >>> kept.rows, kept.row_count
        (((1,), ('<2 bytes>',)), 3)
        """
        kept = tuple(tuple(_json_cell(v) for v in row) for row in result.rows[:rows])
        count = len(result.rows) if result.ok else None
        return cls(result.status, tuple(result.columns), kept, count, result.truncated, result.error)


def result_previews(
    gold: Sequence[ExecResult], answer: ExecResult | None, rows: int
) -> tuple[ResultPreview | None, ResultPreview | None]:
    """What a record keeps of the results it was judged on: the first ``rows`` rows of the gold's
    (first) result and of the answer's (None without one); (None, None) when ``rows`` is 0."""
    if rows <= 0:
        return None, None
    return ResultPreview.of(gold[0], rows) if gold else None, None if answer is None else ResultPreview.of(answer, rows)


def _json_cell(value: SQLValue) -> Any:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


VerdictStatus = Literal[
    "match",
    "mismatch",
    "pred_error",
    "pred_timeout",
    "pred_truncated",
    "gold_invalid",
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of comparing a prediction's result with the gold result under one preset.

    ``status == "gold_invalid"`` means the gold query failed, timed out or was truncated: the example
    is invalid and ``match`` is always False.
    """

    match: bool
    status: VerdictStatus
    reason: str
    preset: str


#: The actions of an episode's turn that use the turn but are no answer (a clarifying question, a probe
#: query, a reply with neither tag under a protocol that counts it as an action): a reward never scores
#: them, and a check of "the first answer" skips them.
NOT_ANSWERS: frozenset[str] = frozenset({"ask", "probe", "invalid"})


@dataclass(frozen=True, slots=True)
class Turn:
    """One policy turn of a refinement trajectory, as the reward sees it.

    ``executable`` is E(y): the SQL ran without a syntax or runtime error (a timeout is not
    executable); ``f`` is the alignment F = (F_struct + F_lex) / 2 against the gold; ``response`` is
    the raw model text (length-based rewards read it).
    """

    sql: str | None
    format_ok: bool
    executable: bool
    match: bool
    f: float
    response: str = ""


@dataclass(frozen=True, slots=True)
class Trajectory:
    """The turns y_1 .. y_K of one rollout (K <= T; the rollout stops at the first match)."""

    turns: tuple[Turn, ...]

    @property
    def k_star(self) -> int | None:
        """The first turn (1-based) whose result matches the gold, or None."""
        return next((index for index, turn in enumerate(self.turns, start=1) if turn.match), None)


@dataclass(frozen=True, slots=True)
class RewardBreakdown:
    """A trajectory reward with its components and the identity of the config that produced it:
    ``version`` is the reward's version id (``progressive-v1``, ``one-shot-v1``, ...), ``config_hash``
    a hash of its weights (``fixed`` for rewards without any)."""

    total: float
    components: tuple[tuple[str, float], ...]
    version: str
    config_hash: str

    def component(self, name: str) -> float:
        return dict(self.components)[name]

    def to_dict(self, digits: int | None = None) -> dict[str, Any]:
        """Plain values (JSON, Ray, parquet); ``digits`` rounds the numbers for files meant for reading."""
        components = {name: plain(value, digits) for name, value in self.components}
        return {
            "total": plain(self.total, digits),
            "components": components,
            "version": self.version,
            "config_hash": self.config_hash,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardBreakdown:
        """The breakdown :meth:`to_dict` wrote."""
        components = tuple((str(name), float(value)) for name, value in dict(data["components"]).items())
        return cls(float(data["total"]), components, str(data["version"]), str(data["config_hash"]))


def plain(value: Any, digits: int | None = None) -> Any:
    """``value`` as plain data (JSON, Ray, parquet): a record by its fields (a reward breakdown by its
    ``to_dict``), mappings as dicts, tuples as lists; ``digits`` rounds the floats for files meant for reading.

    >>> plain(Turn("SELECT 1", True, True, False, 0.123456), digits=2)
    {'sql': 'SELECT 1', 'format_ok': True, 'executable': True, 'match': False, 'f': 0.12, 'response': ''}
    """
    if value is None or isinstance(value, (str, int)):  # the most common leaves first: a cheap test
        return value
    if isinstance(value, float):
        return value if digits is None else round(value, digits)
    if isinstance(value, (list, tuple)):  # rows of results: before the slower tests below
        return [plain(item, digits) for item in value]
    if isinstance(value, dict):
        return {key: plain(item, digits) for key, item in value.items()}
    if isinstance(value, RewardBreakdown):
        return value.to_dict(digits)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: plain(getattr(value, name), digits) for name in _field_names(type(value))}
    if isinstance(value, Mapping):
        return {key: plain(item, digits) for key, item in value.items()}
    return value


def plain_level(value: Any) -> Any:
    """One level of :func:`plain`, as ``json.dumps``'s ``default``: JSON's encoder walks the lists,
    tuples, dicts and leaves itself (in C) and asks for a record (by its fields, a reward breakdown
    by its ``to_dict``) or another mapping; the text is :func:`plain`'s, in a fraction of the time."""
    if isinstance(value, RewardBreakdown):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: getattr(value, name) for name in _field_names(type(value))}
    if isinstance(value, Mapping):
        return dict(value.items())
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


@functools.cache
def _field_names(record: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(record))
