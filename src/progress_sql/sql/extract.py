r"""Model text -> SQL plus a format verdict (the paper's ``<think>...</think><sql>...</sql>`` format);
never raises. The rule and the recovery: docs/environment.md#the-output-format.

>>> extract("<think>count them</think><sql>SELECT count(*) FROM singer;</sql>")
Extracted(sql='SELECT count(*) FROM singer;', format_ok=True, source='tags', problem=None, ask=None)

The second action, a clarifying question to the user (docs/environment.md#clarifying-questions), where
the caller offers it (``ask``); elsewhere the response is an answer without SQL, a format failure:

>>> extract("<think>which order?</think><ask>Oldest first or youngest first?</ask>", ask=True)
Extracted(sql=None, format_ok=True, source='tags', problem=None, ask='Oldest first or youngest first?')
>>> extract("<think>which order?</think><ask>Oldest first or youngest first?</ask>").problem
'an <ask> block, but this task does not offer clarifying questions: no SQL found'
>>> extract("Sure! ```sql\nSELECT 1\n```").sql, extract("Sure! ```sql\nSELECT 1\n```").problem
('SELECT 1', 'no <think>/<sql> blocks; recovered a fenced sql block')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Source = Literal["tags", "fenced", "bare", "none"]

# Only linear-time scans: a policy can emit megabytes of unbalanced tags, and a lazy ``.*?`` pattern
# over such text is quadratic.
_TAG = re.compile(r"<(/?)(think|sql|ask)>", re.IGNORECASE)
_FENCE_LANGUAGE = re.compile(r"(?:sql|sqlite)?[ \t]*\n?", re.IGNORECASE)
# A bare statement starts at SELECT, or at WITH only where a common table expression's head follows
# (``WITH [RECURSIVE] name [(columns)] AS [[NOT] MATERIALIZED] (``): English prose often begins "With ..."
# (265 of the base model's 390 unparsable answers in the paper-profile run of Spider dev). Bounded repeats
# keep the scan linear.
_BARE = re.compile(
    r"\bSELECT\b"
    r"|\bWITH\s{1,64}(?:RECURSIVE\s{1,64})?"
    r"(?:\w{1,128}|\"[^\"\n]{1,128}\"|`[^`\n]{1,128}`|\[[^\]\n]{1,128}\])"
    r"\s{0,64}(?:\([^()]{0,2048}\)\s{0,64})?AS\s{0,64}(?:(?:NOT\s{1,64})?MATERIALIZED\s{0,64})?\(",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Block:
    name: str
    outer_start: int
    inner_start: int
    inner_end: int
    outer_end: int


def _blocks(text: str) -> list[_Block]:
    """``<think>`` / ``<sql>`` blocks in order; an opening tag pairs with the next closing one."""
    blocks: list[_Block] = []
    open_tag: tuple[str, int, int] | None = None
    for match in _TAG.finditer(text):
        closing, name = match.group(1) == "/", match.group(2).lower()
        if not closing and open_tag is None:
            open_tag = (name, match.start(), match.end())
        elif closing and open_tag is not None and open_tag[0] == name:
            blocks.append(_Block(name, open_tag[1], open_tag[2], match.start(), match.end()))
            open_tag = None
    return blocks


def _fenced(text: str) -> list[str]:
    """Contents of ``` fenced blocks, with a leading sql/sqlite language tag removed."""
    contents = []
    start = text.find("```")
    while start != -1:
        end = text.find("```", start + 3)
        if end == -1:
            break
        body = text[start + 3 : end]
        language = _FENCE_LANGUAGE.match(body)
        contents.append(body[language.end() if language else 0 :].strip())
        start = text.find("```", end + 3)
    return [content for content in contents if content]


@dataclass(frozen=True, slots=True)
class Extracted:
    """The SQL found in one response, and whether the response followed the required format."""

    sql: str | None
    format_ok: bool
    source: Source
    problem: str | None = None
    #: The clarifying question of an ``<ask>`` block, when the response asks instead of answering.
    ask: str | None = None


def _exact(text: str, blocks: list[_Block], names: list[str]) -> bool:
    """Whether ``blocks`` are exactly ``names`` in order with nothing but whitespace around and between."""
    if [b.name for b in blocks] != names:
        return False
    edges = [0, *(x for b in blocks for x in (b.outer_start, b.outer_end)), len(text)]
    return not any(text[edges[i] : edges[i + 1]].strip() for i in range(0, len(edges), 2))


#: What a response that asks gets where clarifying questions are not offered: an answer without SQL.
NOT_OFFERED = "an <ask> block, but this task does not offer clarifying questions: no SQL found"


def _asked(text: str, blocks: list[_Block], reasoning: bool = True, offered: bool = False) -> Extracted | None:
    """A response with an ``<ask>`` block and no ``<sql>`` block: a clarifying question where ``offered``,
    else an answer without SQL (nothing is recovered from it: the question is no answer)."""
    ask_blocks = [b for b in blocks if b.name == "ask"]
    if not ask_blocks or any(b.name == "sql" for b in blocks):
        return None
    if not offered:
        return Extracted(None, False, "none", NOT_OFFERED)
    question = text[ask_blocks[-1].inner_start : ask_blocks[-1].inner_end].strip()
    if not question:
        return Extracted(None, False, "tags", "the <ask> block is empty")
    exact = _exact(text, blocks, ["think", "ask"] if reasoning else ["ask"])
    problem = None if exact else (
        "the question must follow a <think> block, with no text outside the tags" if reasoning
        else "the question must be the only block, with no text outside the tags"
    )  # fmt: skip
    return Extracted(None, exact, "tags", problem, ask=question)


def _tagged(text: str, blocks: list[_Block], reasoning: bool = True, ask: bool = False) -> Extracted | None:
    sql_blocks = [b for b in blocks if b.name == "sql"]
    if not sql_blocks:
        return _asked(text, blocks, reasoning, ask)
    last = sql_blocks[-1]
    sql = text[last.inner_start : last.inner_end].strip() or None
    exact = _exact(text, blocks, ["think", "sql"] if reasoning else ["sql"])
    if exact:
        if sql is None:
            return Extracted(None, False, "tags", "the <sql> block is empty")
        return Extracted(sql, True, "tags")
    if len(sql_blocks) > 1:
        problem = f"{len(sql_blocks)} <sql> blocks; the last one is used"
    elif not reasoning:
        problem = "text or blocks outside the one <sql> block"
    elif not any(b.name == "think" for b in blocks):
        problem = "no <think> block before the <sql> block"
    else:
        problem = "text outside the <think> and <sql> blocks"
    return Extracted(sql, False, "tags", problem)


def extract(text: str, *, reasoning: bool = True, ask: bool = False) -> Extracted:
    """Extract the SQL of a response and judge its format (never raises, linear time): with
    ``reasoning`` the paper's ``<think>`` then ``<sql>``, without it ``<sql>`` alone (the ``small``
    prompt style, ``progress_sql.prompts.PROMPT_STYLES``). With ``ask`` (the task offers clarifying
    questions: ``progress_sql.env.core.ask_offered``) an ``<ask>`` block without ``<sql>`` is a
    question (``Extracted.ask``); without it, an answer without SQL (:data:`NOT_OFFERED`).

    >>> extract("<sql>SELECT 1</sql>", reasoning=False).format_ok, extract("<sql>SELECT 1</sql>").format_ok
    (True, False)
    """
    if not isinstance(text, str) or not text.strip():
        return Extracted(None, False, "none", "empty response")
    blocks = _blocks(text)
    tagged = _tagged(text, blocks, reasoning, ask)
    if tagged is not None:
        return tagged
    fenced = _fenced(text)
    if fenced:
        return Extracted(fenced[-1], False, "fenced", "no <think>/<sql> blocks; recovered a fenced sql block")
    # Drop the reasoning, which may mention SELECT in prose.
    kept, position = [], 0
    for block in blocks:
        kept.append(text[position : block.outer_start])
        position = block.outer_end
    kept.append(text[position:])
    outside_think = " ".join(kept)
    bare = _BARE.search(outside_think)
    if bare is not None:
        statement = outside_think[bare.start() :].strip()
        return Extracted(statement, False, "bare", "no <think>/<sql> blocks; recovered a bare statement")
    return Extracted(None, False, "none", "no SQL found")
