"""Feedback kinds by name: what the next user turn says after an answer that did not match
(docs/environment.md#feedback-kinds). ``EnvConfig.feedback`` names one; every consumer (the
environment, profiles, ``rollout``/``eval``/``ablate`` options) reads this one registry.

The three ODT kinds carry tags computed from the gold; ``execution`` is oracle-free: the database's
own observation of the answer (its error text, or the row count and first rows) and nothing else.

>>> sorted(FEEDBACK_KINDS)
['execution', 'tags', 'tags+error', 'tags+error+preview']
>>> [name for name, kind in FEEDBACK_KINDS.items() if not kind.uses_gold]
['execution']
>>> print(execution_observation(ExecResult("ok", columns=("n",), rows=((3,),)), 3))
Your query returned 1 row(s); first rows: (3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from progress_sql.odt import Diagnosis, OdtConfig
from progress_sql.odt.feedback import feedback_text
from progress_sql.prompts import execution_prompt
from progress_sql.registry import lookup
from progress_sql.types import ExecResult, Verdict

#: How much of a database error a feedback turn quotes.
ERROR_CHARS = 300
#: How much of one value a result preview shows.
VALUE_CHARS = 40


@dataclass(frozen=True, slots=True)
class FeedbackInput:
    """What a feedback kind may read about the answer just judged. ``diagnosis`` and ``verdict`` come
    from the gold; an oracle-free kind reads ``result`` only."""

    diagnosis: Diagnosis
    result: ExecResult
    verdict: Verdict | None
    #: The example is a write task (its result has no rows; its checks say how far it got).
    write: bool
    odt: OdtConfig
    preview_rows: int


@dataclass(frozen=True, slots=True)
class FeedbackKind:
    """A named feedback kind; ``text`` writes the user turn with the paper's closing instruction (the
    environment restyles it for its prompt style)."""

    name: str
    #: Whether the text depends on the gold (tags, locations, check verdicts): False only for kinds that
    #: an interactive evaluation may use without leaking the gold (tests/env/test_feedback_kinds.py).
    uses_gold: bool
    text: Callable[[FeedbackInput], str]
    description: str


def execution_observation(result: ExecResult, preview_rows: int) -> str:
    """The database's observation of one query: its error text, or its row count and first rows."""
    if result.status != "ok":
        return f"The database reported: {(result.error or result.status)[:ERROR_CHARS]}"
    rows = result.rows[:preview_rows]
    preview = "; ".join("(" + ", ".join(repr(v)[:VALUE_CHARS] for v in row) + ")" for row in rows) or "no rows"
    return f"Your query returned {len(result.rows)} row(s); first rows: {preview}."


def _odt_details(given: FeedbackInput, *, error: bool, preview: bool) -> str:
    """The text after an ODT message's descriptions: the database's error, a write's checks, a preview."""
    result, verdict = given.result, given.verdict
    if error and given.write:
        # A write's result has no rows to preview: the checks say how far it got.
        details = result.error[:ERROR_CHARS] if result.status != "ok" and result.error else (
            verdict.reason if verdict else ""
        )  # fmt: skip
        return f"The checks report: {details}." if details else ""
    if error and result.status != "ok" and result.error:
        return f"The database reported: {result.error[:ERROR_CHARS]}"
    if preview and result.ok:
        return execution_observation(result, given.preview_rows)
    return ""


def _odt_kind(*, error: bool, preview: bool) -> Callable[[FeedbackInput], str]:
    def text(given: FeedbackInput) -> str:
        details = _odt_details(given, error=error, preview=preview)
        return feedback_text(given.diagnosis.findings, given.diagnosis.status, given.odt, details)

    return text


def _execution(given: FeedbackInput) -> str:
    result = given.result
    if given.write and result.ok:
        observation = "Your statements ran without an error."
    else:
        observation = execution_observation(result, given.preview_rows)
    return execution_prompt(observation, db_engine=given.odt.db_engine)


FEEDBACK_KINDS: Mapping[str, FeedbackKind] = {
    kind.name: kind
    for kind in (
        FeedbackKind("tags", True, _odt_kind(error=False, preview=False),
                     "the ODT's codes and their descriptions (Appendix F's round-2+ template)"),
        FeedbackKind("tags+error", True, _odt_kind(error=True, preview=False),
                     "the ODT's tags, then the database's error (or a write's checks)"),
        FeedbackKind("tags+error+preview", True, _odt_kind(error=True, preview=True),
                     "the ODT's tags, then the database's error or the row count and first rows"),
        FeedbackKind("execution", False, _execution,
                     "oracle-free: the database's error text, or the row count and first rows; no tags"),
    )
}  # fmt: skip


def feedback_kind(name: str) -> FeedbackKind:
    """The feedback kind called ``name``; an unknown name is a ConfigError listing the known ones."""
    return lookup(FEEDBACK_KINDS, name, "feedback kind")
