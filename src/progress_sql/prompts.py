"""The paper's prompt templates (Appendix F) as pure functions, the opening prompt every consumer uses,
and the conversation formats that turn messages into model text (docs/data.md#prompts-and-conversation-formats).

>>> print(feedback_prompt("A required join is missing.", codes=("JOIN_MISSING",)))  # doctest: +NORMALIZE_WHITESPACE
Feedback: your previous SQL has structural issues: JOIN_MISSING. A required join is missing.
Revise your previous answer using these issues. Revise your previous answer for SQLite. Put step-by-step
reasoning inside <think>...</think>, then output exactly one corrected SQLite query inside <sql>...</sql>.
Do not output any text outside those tags.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

from progress_sql.data.ddl import SchemaProfile
from progress_sql.types import Example


class Message(TypedDict):
    """One chat message in the OpenAI / Hugging Face chat-template shape."""

    role: str
    content: str


#: The paragraph that offers the clarifying-question action (docs/environment.md#clarifying-questions):
#: added to the system prompt when the environment offers it (``TaskTermsConfig.offer_ask``).
ASK_INSTRUCTION = (
    "\n\nClarification: If the question is ambiguous or leaves out something you need, you may ask the user one "
    "clarifying question instead of answering: <think>Your reasoning.</think><ask>Your question.</ask> The user "
    "answers in the next message; each question uses one of your turns, and asking about something the question "
    "already settles costs you."
)


def system_prompt(db_engine: str = "SQLite", *, allow_ask: bool = False) -> str:
    """The system prompt of Appendix F with the database engine filled in (and, with ``allow_ask``,
    :data:`ASK_INSTRUCTION` after it)."""
    return _paper_system_prompt(db_engine) + (ASK_INSTRUCTION if allow_ask else "")


def user_answer_prompt(answer: str, *, db_engine: str = "SQLite") -> str:
    """The user's reply to a clarifying question, then the usual closing instruction.

    >>> user_answer_prompt("Order them from the oldest.").split(" Revise")[0]
    'User: Order them from the oldest.'
    """
    return f"User: {answer.strip()} {revision_instruction(db_engine)}"


def _paper_system_prompt(db_engine: str) -> str:
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


@dataclass(frozen=True, slots=True)
class PromptStyle:
    """How a model is asked: the system prompt, the answer format it must follow, the schema rendering and
    the token budget of one answer (docs/data.md#prompt-styles). ``paper`` is Appendix F (reasoning in
    ``<think>``, then ``<sql>``); ``small`` is for models of a few hundred million parameters on a CPU: a
    short instruction, the schema as ``table(col, ...)`` lines, the answer in ``<sql>`` alone, 128 tokens
    (the paper's 1,024-token reasoning costs a 135M model about 20 s a question and gains it nothing)."""

    name: str
    #: The answer is ``<think>...</think><sql>...</sql>`` (True) or ``<sql>...</sql>`` alone (False).
    reasoning: bool
    #: The schema rendering used unless one is named (``progress_sql.data.ddl.SCHEMA_PROFILES``).
    schema_profile: SchemaProfile
    #: Tokens of one answer, unless a budget is named.
    max_new_tokens: int
    description: str

    def system(self, db_engine: str = "SQLite", *, allow_ask: bool = False) -> str:
        """The system prompt (with :data:`ASK_INSTRUCTION` when the ask action is offered)."""
        if self.reasoning:
            return system_prompt(db_engine, allow_ask=allow_ask)
        text = (
            f"You write {db_engine} queries. The user gives a database schema and a question. Answer with exactly "
            f"one {db_engine} query that answers the question, inside <sql>...</sql>, and nothing else. Select "
            "only the columns the question asks for."
        )
        return text + (ASK_INSTRUCTION.replace("<think>Your reasoning.</think>", "") if allow_ask else "")

    def revision(self, db_engine: str = "SQLite") -> str:
        """The closing instruction of every round-2+ user message."""
        if self.reasoning:
            return revision_instruction(db_engine)
        return f"Revise your previous answer: output exactly one corrected {db_engine} query inside <sql>...</sql>."

    def restyle(self, message: str, db_engine: str = "SQLite") -> str:
        """A feedback or user message written with the paper's closing instruction (the ODT writes them so),
        with this style's instead.

        >>> small = PROMPT_STYLES["small"]
        >>> print(small.restyle(feedback_prompt("A join is missing.")))  # doctest: +NORMALIZE_WHITESPACE
        Feedback: A join is missing. Revise your previous answer: output exactly one corrected SQLite query
        inside <sql>...</sql>.
        """
        if self.reasoning:
            return message
        paper = revision_instruction(db_engine)
        return message[: -len(paper)] + self.revision(db_engine) if message.endswith(paper) else message

    def answer(self, sql: str) -> str:
        """A gold answer in this style's format (what a warm start trains on)."""
        return f"<think>\n</think>\n<sql>{sql}</sql>" if self.reasoning else f"<sql>{sql}</sql>"


PROMPT_STYLES: dict[str, PromptStyle] = {
    style.name: style
    for style in (
        PromptStyle(
            "paper", True, "full", 1024,
            "Appendix F: reasoning in <think>, the SQL in <sql>, the full schema with sample values",
        ),
        PromptStyle(
            "small", False, "compact", 128,
            "for small models on a CPU: a short instruction, table(col, ...) lines, the SQL in <sql> alone",
        ),
    )
}  # fmt: skip
PAPER_STYLE = PROMPT_STYLES["paper"]


def prompt_style(name: str) -> PromptStyle:
    """The prompt style called ``name``; an unknown name is a ConfigError listing the known ones."""
    from progress_sql.registry import lookup

    return lookup(PROMPT_STYLES, name, "prompt style")


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
    db_details: str,
    question: str,
    evidence: str | None = None,
    *,
    db_engine: str = "SQLite",
    allow_ask: bool = False,
    style: PromptStyle | None = None,
) -> list[Message]:
    """[system, user] messages that open a rollout (``style``: the paper's by default)."""
    return [
        {"role": "system", "content": (style or PAPER_STYLE).system(db_engine, allow_ask=allow_ask)},
        {"role": "user", "content": round_one_prompt(db_details, question, evidence)},
    ]


def opening_messages(
    example: Example,
    db_details: str,
    *,
    db_engine: str = "SQLite",
    allow_ask: bool = False,
    style: PromptStyle | None = None,
) -> list[Message]:
    """The opening prompt of ``example``: [system, round-1 user] with ``db_details`` (the rendered
    schema of its database, ``progress_sql.data.ddl.db_details``; empty for the no-schema profile).

    >>> example = Example(0, "How many singers?", "music", "music.sqlite", "SELECT count(*) FROM singer")
    >>> opening_messages(example, "")[1]["content"]
    'Question: How many singers?'
    """
    question = example.question if example.write is None else f"{example.question}\n{write_instruction(example)}"
    return initial_messages(
        db_details, question, example.evidence, db_engine=db_engine, allow_ask=allow_ask, style=style
    )


def write_instruction(example: Example) -> str:
    """What a write task's round-1 prompt adds after the question: the statements it may use.

    >>> from progress_sql.types import WriteSpec
    >>> print(write_instruction(Example(0, "q", "d", "d.sqlite", "DELETE FROM t", write=WriteSpec(("t",), ()))))
    ... # doctest: +NORMALIZE_WHITESPACE
    Task: change the database. Inside <sql>...</sql>, write INSERT, UPDATE or DELETE statements on t
    (separated by ;); queries on the resulting data will check the change.
    """
    spec = example.write
    if spec is None:
        return ""
    kinds = [kind.upper() for kind in spec.statements]
    listed = kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"
    return (
        f"Task: change the database. Inside <sql>...</sql>, write {listed} statements on {', '.join(spec.tables)} "
        "(separated by ;); queries on the resulting data will check the change."
    )


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


#: How an oracle-free feedback turn begins (``execution_prompt``; the compact format reads it).
EXECUTION_HEAD = "Execution: "


def execution_prompt(observation: str, *, db_engine: str = "SQLite") -> str:
    """Round-2+ user message of the oracle-free feedback kind: the database's observation of the answer,
    then the usual closing instruction.

    >>> execution_prompt("Your query returned 0 row(s); first rows: no rows.").split(" Revise")[0]
    'Execution: Your query returned 0 row(s); first rows: no rows.'
    """
    return f"{EXECUTION_HEAD}{observation} {revision_instruction(db_engine)}"


# -- conversation formats: messages -> model text (docs/data.md#prompts-and-conversation-formats) ---

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
    """The tiny model's format.

    >>> fmt = CompactFormat()
    >>> fmt.prompt("music", "How many singers?")
    'Q [music] How many singers?\\nA:'
    >>> fmt.answer("SELECT count(*) FROM singer")
    ' <think></think><sql>SELECT count(*) FROM singer</sql>'
    >>> fmt.feedback("Feedback: your previous SQL has structural issues: JOIN_MISSING, WHERE_ERROR. A ...")
    '\\nF: JOIN_MISSING WHERE_ERROR\\nA:'
    >>> fmt.feedback(user_answer_prompt("Oldest first."))
    '\\nU: Oldest first.\\nA:'
    >>> fmt.feedback(execution_prompt("The database reported: no such column: nme"))
    '\\nE: The database reported: no such column: nme\\nA:'
    """

    def prompt(self, db_id: str, question: str) -> str:
        return f"Q [{db_id}] {' '.join(question.split())}\nA:"

    def first_prompt(self, messages: Sequence[Message], db_id: str, question: str) -> str:
        return self.prompt(db_id, question)

    def answer(self, sql: str) -> str:
        return f" <think></think><sql>{' '.join(sql.split())}</sql>"

    def feedback(self, message: str) -> str:
        if message.startswith("User: "):  # the reply to a clarifying question: its words are the point
            return f"\nU: {' '.join(message[6:].split(' Revise your previous answer')[0].split())}\nA:"
        if message.startswith(EXECUTION_HEAD):  # the oracle-free feedback kind: the observation is the point
            observation = message[len(EXECUTION_HEAD) :].split(" Revise your previous answer")[0]
            return f"\nE: {' '.join(observation.split())}\nA:"
        return f"\nF: {feedback_codes(message)}\nA:"


class ChatTemplateFormat:
    """Appendix F messages through a tokenizer's chat template (real instruction models)."""

    def __init__(self, tokenizer: Any, style: PromptStyle | None = None) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("ChatTemplateFormat needs a tokenizer with a chat template")
        self.tokenizer = tokenizer
        self.style = style or PAPER_STYLE

    def _render(self, messages: Sequence[Message], generation_prompt: bool) -> str:
        text = self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=generation_prompt
        )
        return str(text)

    def first_prompt(self, messages: Sequence[Message], db_id: str, question: str) -> str:
        return self._render(messages, True)

    def answer(self, sql: str) -> str:
        return self.style.answer(sql)

    def feedback(self, message: str) -> str:
        message = self.style.restyle(message)  # the ODT writes the paper's closing instruction
        # The text a template puts between the eos that ends an assistant turn (where sampling stops)
        # and the next assistant cue: what follows eos in the turn's own rendering (Qwen's "\n" after
        # <|im_end|>), then the next user turn.
        probe = [Message(role="user", content="q"), Message(role="assistant", content="a")]
        before = self._render(probe, False)
        after = self._render([*probe, Message(role="user", content=message)], True)
        delta = after[len(before) :] if after.startswith(before) else after
        eos = str(self.tokenizer.eos_token or "")
        closing = before.rfind("a" + eos) if eos else -1
        return (before[closing + len("a" + eos) :] if closing >= 0 else "") + delta
