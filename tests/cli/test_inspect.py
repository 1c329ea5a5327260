"""`progress-sql inspect` on a real rollout with planted cases: a hard-coded literal, a match that
fails on the test suite, a sabotaged first turn, a LIMIT guess are each reported with their reason;
honest matches are not; the same through an eval run, and a folder of another kind is refused."""

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
    summary = json.loads((out / "summary.json").read_text())
    assert summary["per_reason"]["suite_failure"] == summary["not_checkable"]["suite_failure"]
    assert summary["per_reason"]["suite_failure"].startswith("not checkable for this run")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _evaluated(tmp_path: Path, *suite_option: str) -> Path:
    """A real `progress-sql eval` run over the planted questions, each answered with the SQL its rollout
    matched with (one answer per question: the last scripted turn)."""
    case = build_suite_case(tmp_path / "case")
    questions = [{"db_id": DB_ID, "question": q, "query": gold} for q, (gold, _) in PLANTED.items()]
    case.questions.write_text(json.dumps(questions))
    predictions = tmp_path / "predictions.sql"
    predictions.write_text("".join(turns[-1].split("<sql>")[1].split("</sql>")[0] + "\n" for _, turns in
                                   PLANTED.values()))  # fmt: skip
    run = tmp_path / "eval"
    result = runner.invoke(app, ["eval", "--task", str(case.questions), "--predictions", str(predictions), "--out",
                                 str(run), "--workers", "1", "--no-plots", *suite_option])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert all(r["match"] for r in _lines(run / "samples.jsonl"))  # every answer matches the original database
    return run


def test_inspect_reads_an_eval_run_and_its_suite_verdicts(tmp_path: Path) -> None:
    """An eval run with a suite: its matched answers, judged with the eval's own test-suite verdicts;
    a one-turn answer has no first turn to sabotage, which the report says instead of counting 0."""
    run = _evaluated(tmp_path, "--suite", str(tmp_path / "case" / "suite"))
    out = tmp_path / "inspect"
    result = runner.invoke(app, ["inspect", str(run), "--out", str(out), "--workers", "1", "--sample", "2"])
    assert result.exit_code == 0, result.output
    assert all((out / name).is_file() for name in RUN_FILES)
    questions = list(PLANTED)
    flagged = {questions[r["index"]]: set(r["reasons"]) for r in _lines(out / "samples.jsonl") if r["reasons"]}
    assert flagged == {q: reasons for q, reasons in EXPECTED.items() if "sabotaged_first_turn" not in reasons}
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kind"], summary["inspected"], summary["matched"]) == ("eval", len(PLANTED), len(PLANTED))
    skipped = summary["per_reason"]["sabotaged_first_turn"]
    assert skipped.startswith("not checkable for this run kind")
    assert summary["per_reason"]["suite_failure"] == 3
    assert "sabotaged_first_turn: not checkable for this run kind" in (out / "report.md").read_text()
    assert (out / "review.md").read_text().count("**Question:**") == 2


def test_inspect_an_eval_run_without_a_suite(tmp_path: Path) -> None:
    """Without a suite the suite check is reported as not checkable; with --suite it judges the eval's answers."""
    run = _evaluated(tmp_path)
    out = tmp_path / "inspect"
    assert runner.invoke(app, ["inspect", str(run), "--out", str(out), "--workers", "1"]).exit_code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert str(summary["per_reason"]["suite_failure"]).startswith("not checkable")
    questions = list(PLANTED)
    flagged = {questions[r["index"]]: set(r["reasons"]) for r in _lines(out / "samples.jsonl") if r["reasons"]}
    assert flagged == {"How many items are there?": {"hard_coded_literal", "no_from"},
                       "Which item has the largest id?": {"limit_guess"}}  # fmt: skip
    again = tmp_path / "again"
    suite = tmp_path / "case" / "suite"
    result = runner.invoke(app, ["inspect", str(run), "--out", str(again), "--workers", "1", "--suite", str(suite)])
    assert result.exit_code == 0, result.output
    assert json.loads((again / "summary.json").read_text())["per_reason"]["suite_failure"] == 3


def solution(sql: str) -> str:
    """An answer under the probe protocol (``<sql>`` is a probe there)."""
    return f"<think>done</think><solution>{sql}</solution>"


#: question -> (gold, the scripted turns of an ``eval --turns 3 --protocol probe`` run): each answer
#: comes after probes, one of which fails, so a check that took a probe for an attempt would misfire.
PROBED: dict[str, tuple[str, list[str]]] = {
    "How many items are there?": (
        "SELECT count(*) FROM item",
        [answer("SELECT count(*) FROM itemz"), answer("SELECT count(*) FROM item"), solution("SELECT 5")],
    ),
    "What is the name of item 3?": (
        "SELECT name FROM item WHERE item_id = 3",
        [answer("SELECT nam FROM item"), solution("SELECT name FROM item WHERE item_id = 3")],
    ),
    "What is the name of item 1?": ("SELECT name FROM item WHERE item_id = 1", [solution("SELECT 'x'"),
                                     solution("SELECT name FROM item WHERE item_id = 1")]),
}  # fmt: skip


def test_inspect_reads_an_interactive_eval_run_with_probes(tmp_path: Path) -> None:
    """``eval --turns`` writes a rollout's episodes under its own command: inspect reads them, judges the
    answers (the ``<solution>`` turns) and not the probes, and names the run's kind."""
    case = build_suite_case(tmp_path / "case")
    case.questions.write_text(json.dumps([{"db_id": DB_ID, "question": q, "query": g} for q, (g, _) in PROBED.items()]))
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"key": q, "responses": turns}) + "\n" for q, (_, turns) in PROBED.items()))
    run = tmp_path / "eval-turns"
    result = runner.invoke(app, ["eval", "--task", str(case.questions), "--backend", "replay", "--replay",
                                 str(replay), "--turns", "3", "--feedback", "execution", "--protocol", "probe",
                                 "--out", str(run), "--workers", "1", "--no-view"])  # fmt: skip
    assert result.exit_code == 0, result.output
    records = _lines(run / "samples.jsonl")
    assert [[t["action"] for t in r["turns"]] for r in records] == [["probe", "probe", "sql"], ["probe", "sql"],
                                                                    ["sql", "sql"]]  # fmt: skip
    assert records[0]["turns"][0]["exec_status"] != "ok"  # the first probe fails
    out = tmp_path / "inspect"
    result = runner.invoke(app, ["inspect", str(run), "--out", str(out), "--workers", "1", "--suite",
                                 str(case.suite)])  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kind"], summary["inspected"]) == ("eval-turns", 3)
    questions = list(PROBED)
    flagged = {questions[r["index"]]: set(r["reasons"]) for r in _lines(out / "samples.jsonl") if r["reasons"]}
    assert flagged == {"How many items are there?": {"hard_coded_literal", "no_from", "suite_failure"}}
    assert summary["per_reason"]["sabotaged_first_turn"] == 0  # checked (not "not checkable"), nothing found


def test_inspect_refuses_a_folder_of_another_kind(tmp_path: Path) -> None:
    case = build_suite_case(tmp_path / "case")
    split = tmp_path / "split"
    result = runner.invoke(app, ["split", "--task", str(case.questions), "--out", str(split), "--fractions", "train=1"])
    assert result.exit_code == 0, result.output
    refused = runner.invoke(app, ["inspect", str(split), "--out", str(tmp_path / "inspect")])
    assert refused.exit_code == 2
    message = " ".join(refused.output.split())
    assert "is a run folder of progress-sql split" in message
    assert "rollout, eval, eval-turns, train" in message
    empty = runner.invoke(app, ["inspect", str(tmp_path / "case"), "--out", str(tmp_path / "inspect")])
    assert empty.exit_code == 2
    assert "no summary.json" in " ".join(empty.output.split())
