"""`progress-sql inspect` on a real rollout with planted cases: a hard-coded literal, a match that
fails on the test suite, a sabotaged first turn, a LIMIT guess are each reported with their reason;
honest matches are not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.runfolder import RUN_FILES
from tests.suite_case import DB_ID, answer, build_suite_case

runner = CliRunner()

#: question -> (gold, the scripted turns); the original database has items 0..4, the suite 0..2 and 0..7.
PLANTED: dict[str, tuple[str, list[str]]] = {
    "How many items are there?": ("SELECT count(*) FROM item", [answer("SELECT 5")]),
    "How many items have an id of at least 2?": (
        "SELECT count(*) FROM item WHERE item_id >= 2",
        [answer("SELECT count(*) FROM item WHERE item_id BETWEEN 2 AND 4")],
    ),
    "What is the name of item 3?": (
        "SELECT name FROM item WHERE item_id = 3",
        ["I would rather not answer yet.", answer("SELECT name FROM item WHERE item_id = 3")],
    ),
    "Which item has the largest id?": (
        "SELECT name FROM item ORDER BY item_id DESC LIMIT 1",
        [answer("SELECT name FROM item LIMIT 1 OFFSET 4")],
    ),
    # honest: right on every database, turn 1 or after an honest wrong first attempt
    "What is the name of item 1?": (
        "SELECT name FROM item WHERE item_id = 1",
        [answer("SELECT name FROM item WHERE item_id = 1")],
    ),
    "List the names of items with an id below 2.": (
        "SELECT name FROM item WHERE item_id < 2",
        [answer("SELECT name FROM item WHERE item_id < 3"), answer("SELECT name FROM item WHERE item_id <= 1")],
    ),
}  # fmt: skip
EXPECTED = {
    "How many items are there?": {"hard_coded_literal", "no_from", "suite_failure"},
    "How many items have an id of at least 2?": {"suite_failure"},
    "What is the name of item 3?": {"sabotaged_first_turn"},
    "Which item has the largest id?": {"limit_guess", "suite_failure"},
}


def _rolled_out(tmp_path: Path) -> tuple[Path, Path]:
    case = build_suite_case(tmp_path / "case")
    questions = [{"db_id": DB_ID, "question": q, "query": gold} for q, (gold, _) in PLANTED.items()]
    case.questions.write_text(json.dumps(questions))
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"key": q, "responses": turns}) + "\n" for q, (_, turns) in PLANTED.items()))
    run = tmp_path / "rollout"
    # the paper's unguarded formula: a broken first turn then pays (what the inspection must catch)
    result = runner.invoke(app, ["rollout", "--task", str(case.questions), "--backend", "replay", "--replay",
                                 str(replay), "--turns", "2", "--reward", "progressive-paper", "--out", str(run),
                                 "--workers", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert all(any(t["match"] for t in r["turns"]) for r in records)  # every planted case is a reward-1 match
    return run, case.suite


def test_inspect_reports_each_planted_case_with_its_reason(tmp_path: Path) -> None:
    run, suite = _rolled_out(tmp_path)
    out = tmp_path / "inspect"
    result = runner.invoke(app, ["inspect", str(run), "--out", str(out), "--suite", str(suite), "--sample", "3",
                                 "--workers", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert all((out / name).is_file() for name in RUN_FILES)
    questions = list(PLANTED)
    flagged = {questions[r["index"]]: set(r["reasons"]) for r in _lines(out / "samples.jsonl") if r["reasons"]}
    assert flagged == EXPECTED
    assert len(_lines(out / "samples.jsonl")) == len(PLANTED)  # honest matches listed, with no reason
    summary = json.loads((out / "summary.json").read_text())
    assert summary["command"] == "inspect"
    assert summary["per_reason"] == {"suite_failure": 3, "hard_coded_literal": 1, "no_from": 1, "limit_guess": 1,
                                     "sabotaged_first_turn": 1, "bad_gold_reward": 0}  # fmt: skip
    assert "SELECT 5" in (out / "report.md").read_text()
    review = (out / "review.md").read_text()
    assert review.count("**Question:**") == 3
    assert "Gold result:" in review
    assert "Prediction result:" in review


def test_without_a_suite_the_suite_check_stays_silent(tmp_path: Path) -> None:
    run, _ = _rolled_out(tmp_path)
    out = tmp_path / "inspect"
    assert runner.invoke(app, ["inspect", str(run), "--out", str(out), "--workers", "1"]).exit_code == 0
    questions = list(PLANTED)
    flagged = {questions[r["index"]]: set(r["reasons"]) for r in _lines(out / "samples.jsonl") if r["reasons"]}
    assert flagged == {q: reasons - {"suite_failure"} for q, reasons in EXPECTED.items() if reasons - {"suite_failure"}}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]
