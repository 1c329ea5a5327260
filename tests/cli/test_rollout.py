"""`progress-sql rollout` with the replay backend over the music fixture data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app

runner = CliRunner()


def answer(sql: str) -> str:
    return f"<think>plan</think><sql>{sql}</sql>"


def write_replay(path: Path, questions: list[dict[str, str]]) -> None:
    lines = []
    for number, item in enumerate(questions):
        gold = item["query"]
        if number == 0:
            responses = [answer(gold)]  # right at once
        elif number == 1:
            responses = [answer("SELECT name FROM singer"), answer(gold)]  # right at turn 2
        else:
            responses = ["I cannot answer.", answer("SELECT name FROM nowhere")]  # never right
        lines.append(json.dumps({"key": item["question"], "responses": responses}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_rollout_with_replay(music_dir: Path, tmp_path: Path) -> None:
    questions = json.loads((music_dir / "questions.json").read_text())
    replay = tmp_path / "replay.jsonl"
    write_replay(replay, questions)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["rollout", "--task", str(music_dir / "questions.json"), "--data-dir", str(music_dir), "--backend", "replay",
         "--replay", str(replay), "--turns", "3", "--out", str(out), "--workers", "1", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    metrics = summary["metrics"]
    assert metrics["scored"] == 6
    assert metrics["success_by_turn"] == {"1": pytest.approx(1 / 6, abs=1e-6), "2": pytest.approx(2 / 6, abs=1e-6),
                                          "3": pytest.approx(2 / 6, abs=1e-6)}  # fmt: skip
    assert summary["settings"]["reward"]["name"] == "progressive"
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["k_star"] for s in samples] == [1, 2, None, None, None, None]
    assert [len(s["turns"]) for s in samples] == [1, 2, 3, 3, 3, 3]
    assert samples[0]["reward"]["total"] == pytest.approx(2.9)
    second = samples[1]
    assert second["turns"][0]["feedback"].startswith("Feedback: your previous SQL has structural issues:")
    assert set(second["reward"]["components"]) == {"fmt", "exec", "late", "align"}
    assert samples[2]["turns"][0]["exec_status"] == "no_sql"


def test_rollout_reports_bad_input_clearly(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["rollout", "--task", "nope.json", "--backend", "replay", "--replay", "x", "--out", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "unknown task" in result.output
    result = runner.invoke(
        app,
        ["rollout", "--task", "spider-dev", "--data-dir", str(tmp_path), "--backend", "gpt", "--out", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert "questions file not found" in result.output or "unknown backend" in result.output
