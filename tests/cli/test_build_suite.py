"""``progress-sql build-suite`` then ``progress-sql eval --suite`` on the committed false-positive
fixture, and the command's input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from tests.conftest import REPO_ROOT, build_database

runner = CliRunner()
PAIRS = json.loads((REPO_ROOT / "tests" / "fixtures" / "false_positives.json").read_text())


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fp_task")
    build_database("false_positives.sql", root / "database")
    questions = [{k: p[k] for k in ("db_id", "question", "query")} for p in PAIRS]
    questions.append({"db_id": "absent", "question": "?", "query": "SELECT 1"})
    (root / "questions.json").write_text(json.dumps(questions))
    (root / "pred.txt").write_text("\n".join([*(p["prediction"] for p in PAIRS), "SELECT 1"]) + "\n")
    return root


def test_build_then_eval_reports_ts_below_ex(task: Path) -> None:
    suite = task / "suite"
    built = runner.invoke(
        app,
        ["build-suite", "--task", str(task / "questions.json"), "--out", str(suite), "--pool", "12", "--max-dbs", "6",
         "--workers", "1"],
    )  # fmt: skip
    assert built.exit_code == 0, built.output
    assert "mean neighbour coverage" in built.output
    assert "database absent (no suite): absent" in built.output
    assert (suite / "manifest.json").is_file()
    assert list((suite / "false_positives").glob("fuzz_*.sqlite"))
    result = runner.invoke(
        app,
        ["eval", "--task", str(task / "questions.json"), "--predictions", str(task / "pred.txt"), "--suite",
         str(suite), "--out", str(task / "out"), "--workers", "1", "--no-plots", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    assert metrics["execution_accuracy"] == 1.0
    assert metrics["test_suite_accuracy"] == 0.0
    assert metrics["ts_scored"] == 4
    assert metrics["ex_minus_ts"] == 1.0
    assert "| EX - TS (points), same examples | 100.00 |" in (task / "out" / "report.md").read_text()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--pool", "-1"], "--pool must be >= 0"),
        (["--max-dbs", "0"], "--max-dbs must be >= 1"),
        (["--timeout", "0"], "--timeout must be > 0"),
        (["--timeout", "inf"], "--timeout must be > 0 and at most 2,147,483 seconds, got inf"),
        (["--db", "nowhere"], "--db names no database"),
    ],
)
def test_bad_input_is_a_clear_error(task: Path, tmp_path: Path, extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["build-suite", "--task", str(task / "questions.json"), "--out", str(tmp_path), *extra])
    assert result.exit_code == 2
    assert message in result.output


def test_unknown_task_is_a_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["build-suite", "--task", "no-such-task", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown task" in result.output


def test_unreadable_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "database" / "junk").mkdir(parents=True)
    (tmp_path / "database" / "junk" / "junk.sqlite").write_text("not a database")
    (tmp_path / "q.json").write_text(json.dumps([{"db_id": "junk", "question": "?", "query": "SELECT 1"}]))
    result = runner.invoke(
        app, ["build-suite", "--task", str(tmp_path / "q.json"), "--out", str(tmp_path / "s"), "--workers", "1"]
    )
    assert result.exit_code == 2
    assert "junk.sqlite" in result.output
