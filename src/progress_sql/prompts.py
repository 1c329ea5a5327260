"""The paper's prompt templates (Appendix F) as pure functions.

>>> print(feedback_prompt("A required join is missing.", codes=("JOIN_MISSING",)))  # doctest: +NORMALIZE_WHITESPACE
Feedback: your previous SQL has structural issues: JOIN_MISSING. A required join is missing.
Revise your previous answer using these issues. Revise your previous answer for SQLite. Put step-by-step
reasoning inside <think>...</think>, then output exactly one corrected SQLite query inside <sql>...</sql>.
Do not output any text outside those tags.
"""

from __future__ import annotations

from collections.abc import Sequence


def revision_instruction(db_engine: str = "SQLite") -> str:
    """The closing instruction of every round-2+ user message."""
    return (
        f"Revise your previous answer for {db_engine}. Put step-by-step reasoning inside <think>...</think>, "
        f"then output exactly one corrected {db_engine} query inside <sql>...</sql>. "
        "Do not output any text outside those tags."
    )


def feedback_prompt(message: str, *, codes: Sequence[str] = (), db_engine: str = "SQLite") -> str:
    """Round-2+ user message: the paper's ODT feedback template.

    With ``codes`` it reads "your previous SQL has structural issues: CODES. DESCRIPTIONS"; without,
    ``message`` stands alone (the neutral and fallback messages).
    """
    if codes:
        head = f"Feedback: your previous SQL has structural issues: {', '.join(codes)}. {message}"
        return f"{head} Revise your previous answer using these issues. {revision_instruction(db_engine)}"
    return f"Feedback: {message} {revision_instruction(db_engine)}"
