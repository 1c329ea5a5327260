"""The run explorer in a real headless Chromium: pages of real runs (a rollout of the embedded data
made here, an eval of a ../shared/data prediction file, two evals compared, audit, train, ablate),
checked against their run folders; a screenshot of each view is saved and must not be blank."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.data.embedded import EMBEDDED_DIR, QUESTIONS_FILE
from progress_sql.runfolder import RunFolder
from progress_sql.view import PAGE_FILE
from tests.cli.test_run_folders import _ablate, _audit, _train, fake_ablation, fake_training  # noqa: F401
from tests.view.browser import (
    choose,
    console_problems,
    metric,
    open_example,
    open_page,
    opened,
    screenshot,
    shown_count,
    shown_ids,
)

runner = CliRunner()
#: A screenshot whose grey levels vary less than this is blank (a drawn page is in the thousands).
BLANK_VARIANCE = 50.0


def answer(sql: str) -> str:
    return f"<think>plan</think><sql>{sql}</sql>"


def embedded_task(folder: Path) -> Path:
    """The embedded questions as a Spider-format task file (databases under ``database/``)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(EMBEDDED_DIR / QUESTIONS_FILE, folder / "questions.json")
    (folder / "database").symlink_to(EMBEDDED_DIR, target_is_directory=True)
    return folder / "questions.json"


@pytest.fixture(scope="module")
def rollout_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3-turn rollout of the first 24 embedded questions: right at once, right at turn 2 after a
    wrong SELECT, or never right (no SQL, then an unknown table, then the wrong SELECT). The wrong
    answer to a gold with a WHERE subquery (question 13) is wrong inside the subquery."""
    root = tmp_path_factory.mktemp("rollout")
    task = embedded_task(root / "data")
    questions = json.loads(task.read_text())[:24]
    lines = []
    for number, item in enumerate(questions):
        gold = item["query"]
        wrong = "SELECT name FROM singer" if item["db_id"] == "concert_singer" else "SELECT petid FROM pets"
        if "(SELECT avg(age) FROM singer)" in gold:
            wrong = gold.replace("avg(age)", "max(age)")
        script = [
            [answer(gold)],
            [answer(wrong), answer(gold)],
            ["no idea", answer("SELECT * FROM nowhere"), answer(wrong)],
        ]
        lines.append(json.dumps({"key": item["question"], "responses": script[number % 3]}))
    replay = root / "replay.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    out = root / "run"
    result = runner.invoke(app, ["rollout", "--task", str(task), "--backend", "replay", "--replay", str(replay),
                                 "--turns", "3", "--limit", "24", "--out", str(out), "--workers", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"page: {out / PAGE_FILE}" in result.output
    return out


def check_not_blank(driver: Any, path: Path) -> None:
    assert screenshot(driver, path) > BLANK_VARIANCE, f"blank screenshot {path}"
    assert path.stat().st_size > 0


def test_rollout_page_shows_every_turn_its_tags_feedback_and_the_changed_clause(
    chromium: Any, rollout_run: Path, screenshots: Path
) -> None:
    records = RunFolder(rollout_run).read_records()
    summary = RunFolder(rollout_run).read_summary()
    open_page(chromium, rollout_run / PAGE_FILE)
    assert console_problems(chromium) == []
    assert metric(chromium, "first-turn EX") == summary["metrics"]["first_turn_accuracy"]
    assert metric(chromium, "success within 3 turns") == summary["metrics"]["success_by_turn"]["3"]
    assert shown_count(chromium) == len(records) == 24
    check_not_blank(chromium, screenshots / "rollout-table.png")

    # a tag filter shows exactly the trajectories that carry the tag at some turn
    tag = "AGGREGATION_MISMATCH"
    carrying = {f"#{r['index']}" for r in records if any(tag in t["tags"] for t in r["turns"])}
    assert carrying
    choose(chromium, "tags", tag)
    assert shown_count(chromium) == len(carrying)
    assert set(shown_ids(chromium)) == carrying
    choose(chromium, "tags", "")
    assert shown_count(chromium) == len(records)

    # a three-turn trajectory: every turn, its tags and the feedback the model saw, from the records
    never = next(r for r in records if len(r["turns"]) == 3)
    open_example(chromium, f"#{never['index']}")
    turns = chromium.find_elements("css selector", "#detail section.turn")
    assert len(turns) == 3
    for element, turn in zip(turns, never["turns"], strict=True):
        assert [t.text for t in element.find_elements("css selector", ".tag")] == turn["tags"]
        feedback = element.find_elements("css selector", ".feedback")
        if turn["feedback"]:
            assert turn["feedback"] in feedback[0].text
        else:
            assert feedback == []
        assert element.find_element("css selector", "pre.turn-sql").text == (turn["sql"] or "(no SQL)")
    check_not_blank(chromium, screenshots / "rollout-three-turns.png")

    # right at turn 2: the diff against turn 1 marks the SELECT clause as changed, FROM as the same
    fixed = next(r for r in records if r["k_star"] == 2 and r["db_id"] == "concert_singer" and r["index"] != 13)
    open_example(chromium, f"#{fixed['index']}")
    second = chromium.find_elements("css selector", "#detail section.turn")[1]
    diff = second.find_element("css selector", ".diff")
    changed = diff.find_elements("css selector", ".clause[data-change='changed']")
    assert [c.get_attribute("data-clause") for c in changed] == ["SELECT"]
    assert changed[0].find_elements("css selector", "ins")
    assert changed[0].find_elements("css selector", "del")
    assert changed[0].find_element("css selector", ".mark").text == "~"  # marked without colour too
    assert diff.find_element("css selector", ".clause[data-clause='FROM']").get_attribute("data-change") == "same"
    assert "changed clauses: SELECT" in second.text
    check_not_blank(chromium, screenshots / "rollout-diff.png")
    assert console_problems(chromium) == []


def test_a_nested_subquery_mistake_shows_where_the_odt_found_it(
    chromium: Any, rollout_run: Path, screenshots: Path
) -> None:
    records = {r["index"]: r for r in RunFolder(rollout_run).read_records()}
    first = records[13]["turns"][0]  # wrong inside the WHERE subquery (max for avg)
    assert {"tag": "AGGREGATION_MISMATCH", "location": ["where"]} in first["findings"]  # the record keeps it
    open_page(chromium, rollout_run / PAGE_FILE)
    view = open_example(chromium, "#13")
    turn = view.find_element("css selector", "section.turn[data-turn='1']")
    shown = {
        (f.get_attribute("data-tag"), f.get_attribute("data-location"))
        for f in turn.find_elements("css selector", ".finding")
    }
    assert shown == {(f["tag"], " / ".join(f["location"])) for f in first["findings"]}
    assert ("AGGREGATION_MISMATCH", "where") in shown
    assert "AGGREGATION_MISMATCH at where" in turn.text
    check_not_blank(chromium, screenshots / "rollout-findings.png")
    assert console_problems(chromium) == []


def test_keyboard_moves_between_examples(chromium: Any, rollout_run: Path) -> None:
    open_page(chromium, rollout_run / PAGE_FILE)
    table = chromium.find_element("id", "table")
    table.send_keys("j")
    opened(chromium, "#0")
    table.send_keys("j", "j")
    opened(chromium, "#2")
    table.send_keys("k")
    opened(chromium, "#1")
    assert chromium.find_element("css selector", ".trow.selected").get_attribute("data-id") == "#1"


@pytest.fixture(scope="module")
def eval_runs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two real evals of published Spider dev predictions (the first 150 examples of models 1 and 2)."""
    root = tmp_path_factory.mktemp("eval")
    runs = []
    for model in (1, 2):
        out = root / f"model_{model}"
        predictions = shared_data / "predictions" / "spider-dev" / f"model_{model}.txt"
        result = runner.invoke(app, ["eval", "--task", "spider-dev", "--data-dir", str(shared_data / "spider"),
                                     "--predictions", str(predictions), "--limit", "150", "--out", str(out),
                                     "--workers", "1"])  # fmt: skip
        assert result.exit_code == 0, result.output
        runs.append(out)
    return runs[0], runs[1]


def test_eval_page_header_filters_and_example_view(
    chromium: Any, eval_runs: tuple[Path, Path], screenshots: Path
) -> None:
    run = eval_runs[0]
    summary, records = RunFolder(run).read_summary(), RunFolder(run).read_records()
    open_page(chromium, run / PAGE_FILE)
    assert console_problems(chromium) == []
    assert metric(chromium, "EX") == summary["metrics"]["execution_accuracy"]
    ex = chromium.find_element("css selector", ".metric[data-metric='EX']").text
    assert f"{100 * summary['metrics']['execution_accuracy']:.2f}%" in ex
    assert f"n = {summary['metrics']['scored']}" in ex
    check_not_blank(chromium, screenshots / "eval-table.png")

    counts: dict[str, int] = {}
    for record in records:
        for tag in record["tags"]:
            counts[tag] = counts.get(tag, 0) + 1
    tag = max(counts, key=lambda t: counts[t])
    choose(chromium, "tags", tag)
    assert shown_count(chromium) == counts[tag]
    assert set(shown_ids(chromium)) <= {f"#{r['index']}" for r in records if tag in r["tags"]}
    choose(chromium, "level", "hard")
    both = [r for r in records if tag in r["tags"] and r["level"] == "hard"]
    assert shown_count(chromium) == len(both)
    choose(chromium, "level", "")
    choose(chromium, "tags", "")

    wrong = next(r for r in records if r["verdict"] == "mismatch")
    chromium.find_element("id", "search").send_keys(wrong["sql"][:40])
    assert f"#{wrong['index']}" in shown_ids(chromium)
    detail = open_example(chromium, f"#{wrong['index']}")
    contexts = {
        json.loads(line)["index"]: json.loads(line) for line in (run / "examples.jsonl").read_text().splitlines()
    }
    assert contexts[wrong["index"]]["question"] in detail.text
    assert detail.find_element("css selector", "pre.gold").text == contexts[wrong["index"]]["gold_sql"]
    assert detail.find_elements("css selector", ".results-gold")  # the first rows of both results, from the record
    gold_rows = detail.find_elements("css selector", ".results-gold tr[data-differs]")
    assert len(gold_rows) == len(wrong["gold_result"]["rows"])
    assert {
        (f.get_attribute("data-tag"), f.get_attribute("data-location"))
        for f in detail.find_elements("css selector", ".finding")
    } == {(f["tag"], " / ".join(f["location"])) for f in wrong["findings"]}
    assert detail.find_elements("css selector", "img") == []  # plots sit below, outside the example view
    assert len(chromium.find_elements("css selector", "#extras img")) == len(list(run.glob("*.png")))
    check_not_blank(chromium, screenshots / "eval-example.png")
    assert console_problems(chromium) == []


def test_two_eval_runs_compared(chromium: Any, eval_runs: tuple[Path, Path], screenshots: Path) -> None:
    a, b = eval_runs
    page = b.parent / "compare.html"
    result = runner.invoke(app, ["view", str(a), str(b), "--out", str(page)])
    assert result.exit_code == 0, result.output
    records_a = {r["index"]: r for r in RunFolder(a).read_records()}
    records_b = {r["index"]: r for r in RunFolder(b).read_records()}
    fixed = [i for i in records_a if records_a[i]["status"] == records_b[i]["status"] == "scored"
             and not records_a[i]["match"] and records_b[i]["match"]]  # fmt: skip
    open_page(chromium, page)
    assert console_problems(chromium) == []
    assert metric(chromium, "fixed (wrong in A, right in B)") == len(fixed)
    choose(chromium, "change", "fixed")
    assert shown_count(chromium) == len(fixed)
    if fixed:
        view = open_example(chromium, f"#{fixed[0]}")
        assert "Diff B against A" in view.text
        for side, records in (("a", records_a), ("b", records_b)):  # each run's result rows, from its record
            kept = records[fixed[0]]["pred_result"]["rows"]
            assert len(view.find_elements("css selector", f".side-{side} .results-prediction tr[data-differs]")) == len(
                kept
            )
    check_not_blank(chromium, screenshots / "compare.png")


@pytest.mark.parametrize("name", ["audit", "train", "ablate"])
def test_the_other_run_folders_open(
    name: str, chromium: Any, music_dir: Path, tmp_path: Path, screenshots: Path, request: Any
) -> None:
    if name != "audit":
        request.getfixturevalue(f"fake_{'training' if name == 'train' else 'ablation'}")
    out = tmp_path / "run"
    command = {"audit": _audit, "train": _train, "ablate": _ablate}[name](music_dir, out)
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.output
    if name == "audit":  # audit writes no page by itself
        assert runner.invoke(app, ["view", str(out)]).exit_code == 0
    open_page(chromium, out / PAGE_FILE)
    assert console_problems(chromium) == []
    assert shown_count(chromium) == len(RunFolder(out).read_records())
    chromium.find_element("id", "table").send_keys("j")
    first = chromium.find_element("css selector", "#table .trow[data-pos='0']").get_attribute("data-id")
    opened(chromium, first)
    check_not_blank(chromium, screenshots / f"{name}.png")
