"""The user who answers clarifying questions (docs/environment.md#clarifying-questions).

:class:`SimulatedUser` is a deterministic function of the question's labels (and a seed that picks
the phrasing): a question that mentions a keyword of a labelled slot gets that slot's intended
interpretation, anything else a polite refusal. :class:`LlmUser` (off by default) lets a generation
backend decide which slot a free-form question addresses, and answers only from the labels: the model
never writes the interpretation itself, so it cannot leak the gold.

>>> from progress_sql.types import AmbiguitySlot, Example
>>> slot = AmbiguitySlot("order", "the sort direction", "From the oldest to the youngest.", ("order", "oldest", "sort"))
>>> example = Example(0, "List singers by age.", "concert_singer", "x.sqlite", "SELECT 1", ambiguity=(slot,))
>>> user = SimulatedUser(seed=0)
>>> user.answer(example, "Should I sort from the oldest?").slot
'order'
>>> user.answer(example, "Which table?").slot is None
True
>>> user.answer(example, "Oldest first?") == SimulatedUser(seed=0).answer(example, "Oldest first?")
True
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from progress_sql.backends.base import Backend, GenerationConfig
from progress_sql.prompts import Message
from progress_sql.types import AmbiguitySlot, Example

_ANSWERS = ("{interpretation}", "I mean this: {interpretation}", "Good question. {interpretation}")
_REFUSALS = (
    "Sorry, I cannot help with that; the question says all I can tell you about it.",
    "I don't know more than the question says about that.",
    "That is not something I can clarify; please work from the question.",
)


@dataclass(frozen=True, slots=True)
class UserAnswer:
    """The user's reply and the slot the question addressed (None: it addressed none)."""

    text: str
    slot: str | None


class User(Protocol):
    """Answers one clarifying question about ``example``."""

    def answer(self, example: Example, question: str) -> UserAnswer: ...


def _mentions(question: str, keyword: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(keyword.lower())}", question.lower()) is not None


def addressed_slot(slots: Sequence[AmbiguitySlot], question: str) -> AmbiguitySlot | None:
    """The first labelled slot whose keywords the question mentions (a keyword matches at a word start)."""
    return next((slot for slot in slots if any(_mentions(question, k) for k in slot.keywords)), None)


def _pick(options: Sequence[str], *key: object) -> str:
    return options[zlib.crc32(repr(key).encode()) % len(options)]


@dataclass(frozen=True, slots=True)
class SimulatedUser:
    """The deterministic user: the same seed, example and question give the same reply."""

    seed: int = 0

    def answer(self, example: Example, question: str) -> UserAnswer:
        return self.reply_for(example, addressed_slot(example.ambiguity, question), question)

    def reply_for(self, example: Example, slot: AmbiguitySlot | None, question: str) -> UserAnswer:
        """The reply once the addressed slot is known (shared with :class:`LlmUser`)."""
        if slot is None:
            return UserAnswer(_pick(_REFUSALS, self.seed, example.index, question), None)
        template = _pick(_ANSWERS, self.seed, example.index, slot.name)
        return UserAnswer(template.format(interpretation=slot.interpretation.strip()), slot.name)


@dataclass(frozen=True, slots=True)
class LlmUser:
    """A backend decides which slot a free-form question addresses (greedy, one short reply); the
    reply is the :class:`SimulatedUser`'s for that slot. A reply naming no known slot is a refusal."""

    backend: Backend
    seed: int = 0
    max_new_tokens: int = 16

    def answer(self, example: Example, question: str) -> UserAnswer:
        simulated = SimulatedUser(self.seed)
        if not example.ambiguity:
            return simulated.reply_for(example, None, question)
        slots = "\n".join(f"- {slot.name}: {slot.missing}" for slot in example.ambiguity)
        prompt: list[Message] = [
            {
                "role": "user",
                "content": (
                    f"A user asked a database question: {example.question!r}\nIt leaves these points open:\n{slots}\n"
                    f"Someone asks the user: {question!r}\nWhich open point does that question ask about? Reply with "
                    "its name only, or NONE."
                ),
            }
        ]
        config = GenerationConfig(max_tokens=self.max_new_tokens, temperature=0.0, seed=self.seed)
        reply = self.backend.generate([prompt], config)[0][0].strip().lower()
        slot = next((s for s in example.ambiguity if re.search(rf"\b{re.escape(s.name.lower())}\b", reply)), None)
        return simulated.reply_for(example, slot, question)


__all__ = ["LlmUser", "SimulatedUser", "User", "UserAnswer", "addressed_slot"]
