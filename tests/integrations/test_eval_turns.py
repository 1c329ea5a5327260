"""``eval --turns T --feedback execution``: a model evaluated interactively on the embedded questions
(the transformers backend with a tiny chat model built here) and a prediction replay with probes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import progress_sql.data.embedded as embedded
from progress_sql.cli import app
from progress_sql.odt.tags import TAGS

pytest.importorskip("torch", reason="the transformers backend needs the [trl] extra")
pytest.importorskip("transformers", reason="the transformers backend needs the [trl] extra")

EMBEDDED = Path(embedded.__file__).parent
QUESTIONS = json.loads((EMBEDDED / "real_questions.json").read_text(encoding="utf-8"))[:3]


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_lm import tiny_model, tiny_tokenizer

    text = (
        "system: You write SQLite queries. user: Question: how many singers? assistant: <sql>SELECT count(*) "
        "FROM singer</sql> user: Execution: Your query returned 1 row(s). <solution>SELECT 1</solution>"
    )
    corpus = [text] * 5
    tokenizer = tiny_tokenizer(corpus)
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    folder = tmp_path_factory.mktemp("tiny-chat")
    tiny_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _eval(tmp_path: Path, *options: str) -> dict[str, Any]:
    out = tmp_path / "run"
    argv = ["eval", "--task", str(EMBEDDED / "real_questions.json"), "--db-root", str(EMBEDDED), "--out", str(out),
            "--limit", "3", "--workers", "1", "--timeout", "5", "--json", *options]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return summary


def _records(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "run" / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_eval_turns_runs_a_transformers_model_on_the_embedded_questions(tmp_path: Path, chat_model: Path) -> None:
    summary = _eval(tmp_path, "--backend", "transformers", "--model", str(chat_model), "--turns", "3",
                    "--feedback", "execution", "--prompt", "small", "--max-tokens", "12", "--no-view")  # fmt: skip
    assert summary["command"] == "eval-turns"
    assert (summary["settings"]["turns"], summary["settings"]["feedback"]) == (3, "execution")
    measures = summary["metrics"]["interactive"]
    assert measures["turns"] == 3
    assert measures["ex_within_turns"]["n"] == 3
    assert measures["single_turn_ex"]["ex"] <= measures["ex_within_turns"]["ex"]
    assert 1.0 <= measures["turns_used"] <= 3.0
    assert measures["probes_per_question"] == 0.0  # the answer protocol: every turn answers
    records = _records(tmp_path)
    assert len(records) == 3
    feedback = [t["feedback"] for r in records for t in r["turns"] if t["feedback"]]
    assert all(text.startswith("Execution: ") for text in feedback)
    assert not [code for text in feedback for code in TAGS if code in text]  # no gold-derived text reached the model


def test_eval_turns_scores_a_replay_with_probes(tmp_path: Path) -> None:
    """Question 1 probes then answers right, question 2 answers wrong then right, question 3 only probes."""
    golds = [q["query"] for q in QUESTIONS]
    script = {
        QUESTIONS[0]["question"]: ["<think>look</think><sql>SELECT count(*) FROM singer</sql>",
                                   f"<think>so</think><solution>{golds[0]}</solution>"],
        QUESTIONS[1]["question"]: ["<think>guess</think><solution>SELECT 0</solution>",
                                   f"<think>fix</think><solution>{golds[1]}</solution>"],
        QUESTIONS[2]["question"]: ["<think>a</think><sql>SELECT 1</sql>", "<think>b</think><sql>SELECT 2</sql>",
                                   "<think>c</think><sql>SELECT 3</sql>"],
    }  # fmt: skip
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"key": k, "responses": v}) + "\n" for k, v in script.items()))
    summary = _eval(tmp_path, "--backend", "replay", "--replay", str(replay), "--turns", "3", "--feedback",
                    "execution", "--protocol", "probe")  # fmt: skip
    measures = summary["metrics"]["interactive"]
    assert (measures["ex_within_turns"]["correct"], measures["single_turn_ex"]["correct"]) == (2, 0)
    assert measures["first_answer_ex"]["correct"] == 1
    assert measures["probes_per_question"] == round(4 / 3, 6)
    assert measures["answers_per_question"] == 1.0
    assert measures["turns_used"] == round(7 / 3, 6)
    records = _records(tmp_path)
    assert [[t["action"] for t in r["turns"]] for r in records] == [
        ["probe", "sql"],
        ["sql", "sql"],
        ["probe", "probe", "probe"],
    ]
    assert records[0]["k_star"] == 1
    assert records[1]["k_star"] == 2
    assert records[2]["k_star"] is None
    assert (tmp_path / "run" / "view.html").is_file()  # the run explorer reads it as a rollout


def test_feedback_without_turns_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["eval", "--task", "spider-dev", "--out", str(tmp_path), "--feedback", "execution"]
    )
    assert result.exit_code == 2
    assert "give --turns T as well" in result.output
