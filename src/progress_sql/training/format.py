"""How a conversation becomes text for a causal LM: turn 1's prompt and the text of each feedback turn.

Two formats:

* :class:`CompactFormat`, for the tiny from-scratch default model: no system prompt and no schema
  (the model learns the schema of its few databases), the question, and feedback reduced to its
  diagnostic tag codes. The model answers ``<think></think><sql>...</sql>``, the paper's format
  with an empty reasoning block.
* :class:`ChatTemplateFormat`, for real instruction models: the paper's Appendix F messages through
  the tokenizer's chat template.

In a multi-turn completion, a feedback segment follows the model's end-of-sequence token and ends
with the cue for the next answer; its tokens are masked out of the loss (TRL's ``env_mask`` = 0).

>>> fmt = CompactFormat()
>>> fmt.prompt("music", "How many singers?")
'Q [music] How many singers?\\nA:'
>>> fmt.answer("SELECT count(*) FROM singer")
' <think></think><sql>SELECT count(*) FROM singer</sql>'
>>> fmt.feedback("Feedback: your previous SQL has structural issues: JOIN_MISSING, WHERE_ERROR. A ...")
'\\nF: JOIN_MISSING WHERE_ERROR\\nA:'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from progress_sql.prompts import Message

_CODES = re.compile(r"structural issues: ([A-Z_, ]+)\.")


def feedback_codes(message: str) -> str:
    """The tag codes of an ODT feedback message; ``VALUES`` when the structure matches (neutral
    message), ``PARSE_ERROR`` for the fallback message.

    >>> feedback_codes("Feedback: your previous SQL has the expected clause structure, but ...")
    'VALUES'
    """
    match = _CODES.search(message)
    if match:
        return " ".join(code.strip() for code in match.group(1).split(",") if code.strip())
    return "VALUES" if "expected clause structure" in message else "PARSE_ERROR"


class ConversationFormat(Protocol):
    """Turns the environment's messages into model text."""

    def first_prompt(self, messages: Sequence[Message], db_id: str, question: str) -> str: ...

    def answer(self, sql: str) -> str: ...

    def feedback(self, message: str) -> str: ...


class CompactFormat:
    """The tiny model's format (see the module docstring)."""

    def prompt(self, db_id: str, question: str) -> str:
        return f"Q [{db_id}] {' '.join(question.split())}\nA:"

    def first_prompt(self, messages: Sequence[Message], db_id: str, question: str) -> str:
        return self.prompt(db_id, question)

    def answer(self, sql: str) -> str:
        return f" <think></think><sql>{' '.join(sql.split())}</sql>"

    def feedback(self, message: str) -> str:
        return f"\nF: {feedback_codes(message)}\nA:"


class ChatTemplateFormat:
    """Appendix F messages through a tokenizer's chat template (real instruction models)."""

    def __init__(self, tokenizer: Any) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("ChatTemplateFormat needs a tokenizer with a chat template")
        self.tokenizer = tokenizer

    def _render(self, messages: Sequence[Message], generation_prompt: bool) -> str:
        text = self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=generation_prompt
        )
        return str(text)

    def first_prompt(self, messages: Sequence[Message], db_id: str, question: str) -> str:
        return self._render(messages, True)

    def answer(self, sql: str) -> str:
        return f"<think>\n</think>\n<sql>{sql}</sql>"

    def feedback(self, message: str) -> str:
        # The text a template puts between an assistant turn and the next assistant cue.
        probe = [Message(role="user", content="q"), Message(role="assistant", content="a")]
        before = self._render(probe, False)
        after = self._render([*probe, Message(role="user", content=message)], True)
        return after[len(before) :] if after.startswith(before) else after
