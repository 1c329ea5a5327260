"""Turn protocols by name: what one model turn may be (docs/environment.md#turn-protocols).
``EnvConfig.protocol`` names one.

* ``answer`` (the default, the paper's loop): every turn is an answer in ``<sql>``, judged.
* ``probe``: a turn is a probe (``<sql>``: exploratory SQL, run under the executor's protections, its
  rows or error shown in ``<observation>``, never judged) or an answer (``<solution>``, judged; a
  wrong one gets the configured feedback kind and the episode goes on). A turn with neither is an
  answer without SQL, a format failure.
* ``skyrl``: SkyRL-SQL's protocol as skyrl-gym 0.4.0's ``text2sql`` environment runs it
  (``skyrl_gym/envs/sql/env.py``, ``utils.py``, ``tools/sql.py``): ``<sql>`` probes observed as a
  pandas frame with a turns-left reminder, the first ``<solution>`` ends the episode, five turns, the
  reward -1 (the whole transcript breaks its format) / 0 / 1 (the rows equal the gold's as a set); a
  turn with neither is an invalid action, observed as such. Its defaults (T, reward, preset) are
  :attr:`Protocol.defaults`.

Every turn of any kind uses one of the T turns; only answers are attempts (Y of the progressive reward).

>>> read_turn("<think>x</think><sql>SELECT 1</sql>")
TurnAction(kind='probe', sql='SELECT 1')
>>> read_turn("<think>x</think><solution>SELECT 1</solution>").kind
'answer'
>>> skyrl_format_ok("<think>a</think><sql>q</sql><observation>r</observation>\\n<think>b</think><solution>s</solution>")
True
>>> skyrl_format_ok("<think>a</think><sql>q</sql><observation>r</observation><solution>s</solution>")
False
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from progress_sql.env.feedback import execution_observation
from progress_sql.registry import lookup
from progress_sql.types import ExecResult

TurnKind = Literal["answer", "probe", "invalid"]

SOLUTION_START, SOLUTION_END = "<solution>", "</solution>"
PROBE_START, PROBE_END = "<sql>", "</sql>"
#: The format problem of a turn with neither tag (an invalid action, or an answer without SQL).
NEITHER_ACTION = "neither a <sql> probe nor a <solution> answer"
SKYRL_FORMAT_PROBLEM = (
    "the episode breaks SkyRL-SQL's format: one <solution> without tags inside, a <think> block, and a <think> "
    "after every observation"
)
#: The closing instruction of feedback after a wrong answer under a probe protocol.
PROBE_REVISION = (
    "Revise your answer: explore with a query inside <sql>...</sql>, or give the final query inside "
    "<solution>...</solution>."
)


@dataclass(frozen=True, slots=True)
class TurnAction:
    """What one response is under a probe protocol: an answer (its SQL is read by the answer rule), a
    probe with its SQL, or neither (``invalid``)."""

    kind: TurnKind
    sql: str | None = None


def read_turn(response: str) -> TurnAction:
    """A response under a probe protocol: an answer when it holds both solution tags (skyrl-gym's
    ``_is_done`` rule), else a probe with the text of its first ``<sql>`` block (``_parse_action``),
    else invalid. Plain ``find`` scans: linear in the response's length."""
    if SOLUTION_START in response and SOLUTION_END in response:
        return TurnAction("answer")
    start = response.find(PROBE_START)
    end = response.find(PROBE_END, start + len(PROBE_START)) if start >= 0 else -1
    if end < 0:
        return TurnAction("invalid")
    return TurnAction("probe", response[start + len(PROBE_START) : end])


def solution_sql(text: str) -> str | None:
    """The SQL of the first ``<solution>`` block of ``text`` (stripped), None without one."""
    start = text.find(SOLUTION_START)
    end = text.find(SOLUTION_END, start + len(SOLUTION_START)) if start >= 0 else -1
    return text[start + len(SOLUTION_START) : end].strip() if end >= 0 else None


_TAG_IN_SOLUTION = re.compile(r"</?(think|sql|observation)\b", re.IGNORECASE)


def skyrl_format_ok(transcript: str) -> bool:
    """SkyRL-SQL's format rule over a whole episode's text (its responses and observations joined):
    exactly one solution block with no tag inside, at least one ``<think>`` block, and a ``<think>``
    right after every observation before the solution."""
    if transcript.count(SOLUTION_START) != 1:
        return False
    before, tail = transcript.split(SOLUTION_START, 1)
    if tail.count(SOLUTION_END) != 1:
        return False
    if _TAG_IN_SOLUTION.search(tail.split(SOLUTION_END, 1)[0]):
        return False
    think = transcript.find("<think>")
    if think < 0 or transcript.find("</think>", think + len("<think>")) < 0:
        return False
    closings = [m.end() for m in re.finditer(r"</observation>", before, re.IGNORECASE)]
    return all(before[end:].lstrip().lower().startswith("<think>") for end in closings)


@dataclass(frozen=True, slots=True)
class ProbeContext:
    """What a probe's observation may say: its result (None for an invalid turn), its SQL, the
    database file, the turns left and the preview cap."""

    result: ExecResult | None
    sql: str | None
    db_path: str
    turns_left: int
    preview_rows: int


@dataclass(frozen=True, slots=True)
class Protocol:
    """A named turn protocol; ``observe`` writes the user turn after a probe or an invalid turn."""

    name: str
    #: Whether a turn may be a probe (False: every turn is an answer, the paper's loop).
    probes: bool
    #: Whether the first answer ends the episode, right or wrong (SkyRL-SQL), instead of the first match.
    answer_ends_episode: bool
    #: Whether a turn with neither tag is an invalid action (observed, no attempt; SkyRL-SQL) rather
    #: than an answer without SQL (a format failure).
    invalid_is_action: bool
    #: Whether an answer's format verdict is SkyRL-SQL's rule over the whole transcript
    #: (:func:`skyrl_format_ok`) rather than the answer rule over the response.
    transcript_format: bool
    observe: Callable[[ProbeContext], str] | None
    #: The system prompt (None: the prompt style's).
    system: Callable[[str], str] | None
    #: EnvConfig fields a command sets when the protocol is named and the option is not given.
    defaults: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


def _probe_system(db_engine: str) -> str:
    return (
        f"You answer questions about a {db_engine} database. The user message gives its schema and a question. "
        "Think inside <think>...</think>. You may run an exploratory query inside <sql>...</sql>: its rows or "
        "its error come back inside <observation>...</observation>, and each query uses one of your turns. When "
        f"you are ready, give exactly one final {db_engine} query inside <solution>...</solution>; only that "
        "query is judged."
    )


def _probe_observation(given: ProbeContext) -> str:
    seen = "no SQL" if given.result is None else execution_observation(given.result, given.preview_rows)
    return f"<observation>{seen}</observation> You have {given.turns_left} turn(s) left."


def _skyrl_system(db_engine: str) -> str:
    # Our words for the format rules of SkyRL-SQL's training prompt (skyrl-train's
    # examples/text_to_sql/sql_dataset.py THINKING_SYSTEM); skyrl-gym itself carries no prompt.
    return (
        f"You are a data science expert. The user message gives a {db_engine} database schema and a question; "
        "write a valid SQL query that answers it within a limited number of turns. Output only what the question "
        "asks for.\n\nFormat:\n- Think inside <think>...</think> every time you get a new observation.\n"
        "- You may run SQL inside one <sql>...</sql> block to explore or verify; its result comes back as a "
        "dataframe inside <observation>...</observation> (cut to 50 rows when it is long).\n"
        "- When no more exploration is needed, or no turns are left, give the final SQL query inside "
        "<solution>...</solution>."
    )


#: skyrl-gym 0.4.0's texts (tools/sql.py).
SKYRL_INVALID = (
    "Your previous action is invalid. Follow the format of outputting thinking process and sql tool, and try again."
)
SKYRL_FRAME_CHARS, SKYRL_FRAME_ROWS = 9000, 50


def skyrl_frame(rows: tuple[tuple[Any, ...], ...]) -> str:
    """A result as skyrl-gym's SQL tool shows it: the rows as a set in a pandas frame, without index;
    cut to the first 50 rows when longer than 9,000 characters. Needs pandas (skyrl-gym's dependency)."""
    import pandas as pd  # type: ignore[import-untyped]

    frame = pd.DataFrame(frozenset(rows))
    text = str(frame.to_string(index=False))
    if len(text) > SKYRL_FRAME_CHARS:
        head = str(frame.head(SKYRL_FRAME_ROWS).to_string(index=False))
        text = "Truncated to 50 lines since returned response too long: " + head
    return text


def _skyrl_observation(given: ProbeContext) -> str:
    result = given.result
    if result is None or given.sql is None:
        seen = SKYRL_INVALID
    elif result.status == "timeout":
        seen = f"SQL Timeout:\n{given.sql}"
    elif result.status != "ok":
        seen = f"Error executing SQL: {result.error}, db file: {given.db_path}"
    else:
        seen = skyrl_frame(result.rows)
    reminder = f"<reminder>You have {given.turns_left} turns left to complete the task.</reminder>"
    return f"\n\n<observation>{seen}\n{reminder}</observation>\n\n"


PROTOCOLS: Mapping[str, Protocol] = {
    protocol.name: protocol
    for protocol in (
        Protocol("answer", False, False, False, False, None, None,
                 description="every turn is an answer in <sql>, judged (the paper's loop)"),
        Protocol("probe", True, False, False, False, _probe_observation, _probe_system,
                 description="<sql> probes observed, never judged; <solution> answers judged; feedback after a "
                             "wrong answer"),
        Protocol("skyrl", True, True, True, True, _skyrl_observation, _skyrl_system,
                 defaults={"max_turns": 5, "reward": "skyrl-sql", "preset": "bird"},
                 description="SkyRL-SQL (skyrl-gym 0.4.0 text2sql): <sql> probes, the first <solution> ends, "
                             "T = 5, reward -1/0/1"),
    )
}  # fmt: skip


def get_protocol(name: str) -> Protocol:
    """The turn protocol called ``name``; an unknown name is a ConfigError listing the known ones."""
    return lookup(PROTOCOLS, name, "turn protocol")
