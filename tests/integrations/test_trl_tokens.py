"""The TRL rollout's token stream against a real chat template: Qwen2.5's tokenizer and template
(tests/fixtures/qwen2_5_tokenizer, provenance in its README), a two-turn conversation compared token
for token with the template's own rendering, the feedback masked and the model turns not."""

from __future__ import annotations

import lzma
import shutil
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data import case_study
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import EXAMPLE_ID, ROWS_ATTRIBUTE, SampledTurn, TrlRollout
from progress_sql.prompts import ChatTemplateFormat, Message, opening_messages
from progress_sql.types import Example

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "qwen2_5_tokenizer"


@pytest.fixture(scope="module")
def qwen_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The fixture's tokenizer, loaded the way a model folder's is (AutoTokenizer)."""
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("qwen2_5_tokenizer")
    shutil.copy(FIXTURE / "tokenizer_config.json", folder / "tokenizer_config.json")
    (folder / "tokenizer.json").write_bytes(lzma.decompress((FIXTURE / "tokenizer.json.xz").read_bytes()))
    return AutoTokenizer.from_pretrained(folder)


def test_the_fixture_is_qwen2_5(qwen_tokenizer: Any) -> None:
    shipped_by_trl = resources.files("trl").joinpath("chat_templates", "qwen2_5.jinja").read_text(encoding="utf-8")
    assert qwen_tokenizer.chat_template == shipped_by_trl  # TRL's "original Qwen2.5 chat template"
    assert len(qwen_tokenizer) == 151665
    assert (qwen_tokenizer.eos_token, qwen_tokenizer.eos_token_id) == ("<|im_end|>", 151645)
    assert qwen_tokenizer("<|im_start|>system\n", add_special_tokens=False)["input_ids"] == [151644, 8948, 198]
    assert qwen_tokenizer("Hello world", add_special_tokens=False)["input_ids"] == [9707, 1879]


class RecordingFormat(ChatTemplateFormat):
    """The chat-template format, keeping every feedback message the rollout rendered."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__(tokenizer)
        self.messages: list[str] = []

    def feedback(self, message: str) -> str:
        self.messages.append(message)
        return super().feedback(message)


class Scripted:
    """The n-th model turn of a context is the n-th SQL, as the model would write it, then eos."""

    def __init__(self, tokenizer: Any, fmt: ChatTemplateFormat, script: Sequence[str]) -> None:
        self.tokenizer, self.fmt, self.script = tokenizer, fmt, script

    def collective(self, trainer: Any) -> bool:
        return False

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]:
        eos = self.tokenizer.eos_token_id
        turns = []
        for context in contexts:
            # the opening (system, user) ends two turns with eos, each answer and feedback one more
            answer = self.fmt.answer(self.script[(context.count(eos) - 2) // 2])
            turns.append(SampledTurn((*self.tokenizer(answer, add_special_tokens=False)["input_ids"], eos)))
        return turns


def test_two_turns_match_the_template_token_for_token(
    qwen_tokenizer: Any, lenses_db: Path, pool: ExecutionPool
) -> None:
    example = Example(0, "names and average prices", "contact_lenses", str(lenses_db), case_study.GOLD_SQL)
    fmt = RecordingFormat(qwen_tokenizer)
    script = [case_study.TURNS[0], case_study.GOLD_SQL]  # wrong, then right: one feedback turn
    opening = opening_messages(example, "")
    prompt = fmt.first_prompt(opening, example.db_id, example.question)
    rollout = TrlRollout([example], qwen_tokenizer, fmt, Scripted(qwen_tokenizer, fmt, script), pool=pool)
    trainer = type("Trainer", (), {ROWS_ATTRIBUTE: [{EXAMPLE_ID: 0}]})()
    out = rollout([prompt], trainer)
    assert out["k_star"] == [2]
    (feedback,) = fmt.messages

    conversation: list[Message] = [
        *opening,
        Message(role="assistant", content=fmt.answer(script[0])),
        Message(role="user", content=feedback),
        Message(role="assistant", content=fmt.answer(script[1])),
    ]
    rendered = qwen_tokenizer.apply_chat_template(conversation, tokenize=False)
    template_ids = qwen_tokenizer(rendered, add_special_tokens=False)["input_ids"]
    stream = out["prompt_ids"][0] + out["completion_ids"][0]
    newline = qwen_tokenizer("\n", add_special_tokens=False)["input_ids"]
    # the template closes the last turn with "\n" after <|im_end|>; sampling stops at <|im_end|>
    assert template_ids == stream + newline

    def ids(text: str) -> list[int]:
        return list(qwen_tokenizer(text, add_special_tokens=False)["input_ids"])

    eos = qwen_tokenizer.eos_token_id
    first, second = [*ids(fmt.answer(script[0])), eos], [*ids(fmt.answer(script[1])), eos]
    between = out["completion_ids"][0][len(first) : len(out["completion_ids"][0]) - len(second)]
    assert out["completion_ids"][0] == first + between + second
    # the environment's part: the "\n" the template puts after <|im_end|>, the user turn, the assistant cue
    assert qwen_tokenizer.decode(between) == f"\n<|im_start|>user\n{feedback}<|im_end|>\n<|im_start|>assistant\n"
    assert between[: len(newline)] == newline
    assert out["env_mask"][0] == [1] * len(first) + [0] * len(between) + [1] * len(second)
