"""``progress-sql eval`` through typer's CliRunner, on a small task built by the test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from progress_sql.cli import app

runner = CliRunner()


def _task(tmp_path: Path, make_database: Any) -> Path:
    make_database("compare.sql", tmp_path / "database")
    items = [
        {"db_id": "compare", "question": "names", "query": "SELECT name FROM singer"},
        {"db_id": "compare", "question": "count", "query": "SELECT count(*) FROM singer"},
        {"db_id": "compare", "question": "bad gold", "query": "SELECT nothing FROM nowhere"},
        {"db_id": "absent", "question": "missing db", "query": "SELECT 1"},
    ]
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(items))
    return questions


def test_eval_writes_samples_and_summary(tmp_path: Path, make_database: Any) -> None:
    questions = _task(tmp_path, make_database)
    predictions = tmp_path / "pred.txt"
    predictions.write_text("SELECT name FROM singer ORDER BY name\nSELECT 5\nSELECT 1\nSELECT 1\n")
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            "eval",
            "--task",
            str(questions),
            "--predictions",
            str(predictions),
            "--preset",
            "strict",
            "--out",
            str(out),
            "--timeout",
            "5",
            "--workers",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["index"] for s in samples] == [0, 1, 2, 3]
    assert [s["verdict"] for s in samples] == ["match", "mismatch", "gold_invalid", "skipped"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["preset"]["name"] == "strict"
    assert summary["metrics"]["execution_accuracy"] == 0.5
    assert summary["metrics"]["skipped"] == 1
    assert summary["metrics"]["gold_invalid"] == 1
    assert any("skipped" in note for note in summary["notes"])


def test_eval_reads_jsonl_predictions(tmp_path: Path, make_database: Any) -> None:
    questions = _task(tmp_path, make_database)
    predictions = tmp_path / "pred.jsonl"
    rows = [{"index": i, "sql": "SELECT count(*) FROM singer"} for i in (3, 2, 1, 0)]
    predictions.write_text("\n".join(json.dumps(r) for r in rows))
    result = runner.invoke(
        app,
        [
            "eval",
            "--task",
            str(questions),
            "--predictions",
            str(predictions),
            "--out",
            str(tmp_path / "o"),
            "--workers",
            "1",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["metrics"]["matched"] == 1


def test_missing_predictions_file_is_a_clear_error(tmp_path: Path, make_database: Any) -> None:
    questions = _task(tmp_path, make_database)
    result = runner.invoke(
        app,
        [
            "eval",
            "--task",
            str(questions),
            "--predictions",
            str(tmp_path / "none.txt"),
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code != 0
    assert "predictions file not found" in result.output


def test_wrong_prediction_count_and_bad_preset(tmp_path: Path, make_database: Any) -> None:
    questions = _task(tmp_path, make_database)
    predictions = tmp_path / "pred.txt"
    predictions.write_text("SELECT 1\n")
    result = runner.invoke(
        app, ["eval", "--task", str(questions), "--predictions", str(predictions), "--out", str(tmp_path)]
    )
    assert result.exit_code != 0
    assert "1 entry (the last at line 1) for 4 examples" in result.output
    predictions.write_text("SELECT 1\n" * 4)
    result = runner.invoke(
        app,
        [
            "eval",
            "--task",
            str(questions),
            "--predictions",
            str(predictions),
            "--out",
            str(tmp_path),
            "--preset",
            "fuzzy",
        ],
    )
    assert result.exit_code != 0
    assert "unknown preset" in result.output
