"""The paper's prompt templates (Appendix F) as pure functions.

``initial_messages`` builds the system and round-1 user messages; ``feedback_prompt`` the round-2+
user message that carries the ODT feedback. BIRD's evidence is placed with the question.

>>> print(feedback_prompt("A required join is missing.", codes=("JOIN_MISSING",)))  # doctest: +NORMALIZE_WHITESPACE
Feedback: your previous SQL has structural issues: JOIN_MISSING. A required join is missing.
Revise your previous answer using these issues. Revise your previous answer for SQLite. Put step-by-step
reasoning inside <think>...</think>, then output exactly one corrected SQLite query inside <sql>...</sql>.
Do not output any text outside those tags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict


class Message(TypedDict):
    """One chat message in the OpenAI / Hugging Face chat-template shape."""

    role: str
    content: str


def system_prompt(db_engine: str = "SQLite") -> str:
    """The system prompt of Appendix F with the database engine filled in."""
    return (
        "Task Overview: You are a data science expert. The user message contains the database schema and the "
        "natural language question. Your task is to understand the schema and generate a valid SQL query to "
        f"answer the question.\n\nDatabase Engine: {db_engine}\n\nInstructions:\n"
        f"- Dialect Strictness: Ensure the generated SQL strictly conforms to the specific syntax and functions "
        f"of the provided {db_engine}.\n"
        "- Precision: Only output the exact information asked in the question. Do not include extra columns in "
        "the SELECT clause.\n"
        "- Ambiguity Prevention: Always use short table aliases (e.g., t1, t2) and explicitly qualify all column "
        "names with their respective table aliases, especially when JOINs are involved.\n"
        "- Robustness: Consider edge cases such as handling NULL values appropriately and string matching case "
        "conventions where applicable.\n"
        "- Thinking Process: Before generating the final SQL query, step-by-step analyze the tables needed, the "
        "JOIN conditions, and the filtering criteria. Enclose your reasoning strictly within <think> and </think> "
        "tags.\n\n"
        "Output Format: Please strictly follow this exact output structure. Do not output any other text or "
        "markdown outside of these tags:\n<think>Your step-by-step reasoning here.</think><sql>SELECT ...</sql>"
    )


def question_text(question: str, evidence: str | None = None) -> str:
    """The question with BIRD's external knowledge (evidence) placed beside it.

    >>> question_text("How many heroes are tall?", "tall refers to height_cm > 200")
    'How many heroes are tall?\\nEvidence: tall refers to height_cm > 200'
    """
    evidence = (evidence or "").strip()
    return f"{question.strip()}\nEvidence: {evidence}" if evidence else question.strip()


def round_one_prompt(db_details: str, question: str, evidence: str | None = None) -> str:
    """The round-1 user prompt of Appendix F (``db_details`` may be empty for the no-schema profile)."""
    schema = (
        f"Database Schema:\n{db_details}\nThis schema describes the database's structure, including tables, "
        "columns, primary keys, foreign keys, and any relevant relationships or constraints.\n\n"
        if db_details
        else ""
    )
    return f"{schema}Question: {question_text(question, evidence)}"


def initial_messages(
    db_details: str, question: str, evidence: str | None = None, *, db_engine: str = "SQLite"
) -> list[Message]:
    """[system, user] messages that open a rollout."""
    return [
        {"role": "system", "content": system_prompt(db_engine)},
        {"role": "user", "content": round_one_prompt(db_details, question, evidence)},
    ]


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
