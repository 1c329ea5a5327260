"""The Appendix F templates."""

from __future__ import annotations

from progress_sql.prompts import feedback_prompt, initial_messages, round_one_prompt, system_prompt


def test_system_prompt_names_the_engine_and_the_format() -> None:
    text = system_prompt("SQLite")
    assert "Database Engine: SQLite" in text
    assert "<think>Your step-by-step reasoning here.</think><sql>SELECT ...</sql>" in text
    assert "PostgreSQL" in system_prompt("PostgreSQL")


def test_round_one_prompt_places_evidence_with_the_question() -> None:
    text = round_one_prompt("CREATE TABLE t (a INT);", "How many?", "many refers to a > 3")
    assert text.startswith("Database Schema:\nCREATE TABLE t (a INT);\nThis schema describes")
    assert text.endswith("Question: How many?\nEvidence: many refers to a > 3")
    assert round_one_prompt("", "How many?") == "Question: How many?"


def test_initial_messages_shape() -> None:
    messages = initial_messages("CREATE TABLE t (a INT);", "How many?")
    assert [m["role"] for m in messages] == ["system", "user"]


def test_feedback_prompt_of_round_two() -> None:
    text = feedback_prompt("A required join is missing.", codes=("JOIN_MISSING",), db_engine="SQLite")
    assert text.startswith(
        "Feedback: your previous SQL has structural issues: JOIN_MISSING. A required join is missing."
    )
    assert "Revise your previous answer for SQLite." in text
