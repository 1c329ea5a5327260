"""Task specs and the robustness sets' formats; bird-dev on the databases at hand."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.data.tasks import SPIDER_FORMAT, TASKS, resolve_task
from progress_sql.errors import DatasetError
from progress_sql.evaluation.analysis import analyze, categories
from tests.conftest import build_database

runner = CliRunner()


def test_every_task_names_its_preset_breakdown_and_version() -> None:
    assert {name: (t.preset, t.breakdown) for name, t in TASKS.items()} == {
        "spider-dev": ("spider", "hardness"),
        "spider-test": ("spider", "hardness"),
        "bird-dev": ("bird", "difficulty"),
        "spider-dk": ("spider", "hardness"),
        "spider-syn": ("spider", "hardness"),
        "spider-realistic": ("spider", "hardness"),
        "spider-train": ("spider", "hardness"),
        "bird-train": ("bird", "difficulty"),
        "synsql": ("spider", "difficulty"),
        "embedded-write": ("spider", "difficulty"),
        "embedded-ambiguous": ("spider", "difficulty"),
    }
    assert all(t.version for t in TASKS.values())


def test_robustness_formats(tmp_path: Path) -> None:
    build_database("shop.sql", tmp_path / "database")
    gold = "SELECT count(*) FROM item"
    (tmp_path / "Spider-DK.json").write_text(json.dumps([{"db_id": "shop", "question": "How many?", "query": gold}]))
    (tmp_path / "spider-realistic.json").write_text(
        json.dumps([{"db_id": "shop", "question": "Count them.", "query": gold, "sql": {}}])
    )
    (tmp_path / "Spider-Syn").mkdir()
    (tmp_path / "Spider-Syn" / "dev.json").write_text(
        json.dumps([{"db_id": "shop", "SpiderQuestion": "How many items?", "SpiderSynQuestion": "How many goods?",
                     "query": gold}])
    )  # fmt: skip
    questions = {name: resolve_task(name, tmp_path)[1][0] for name in ("spider-dk", "spider-realistic", "spider-syn")}
    assert questions["spider-syn"].question == "How many goods?"
    assert questions["spider-dk"].question == "How many?"
    assert all(e.gold_sql == gold and Path(e.db_path).is_file() for e in questions.values())
    (tmp_path / "Spider-Syn" / "dev.json").write_text(json.dumps([{"db_id": "shop", "query": gold}]))
    with pytest.raises(DatasetError, match="SpiderSynQuestion"):
        resolve_task("spider-syn", tmp_path)


def test_a_questions_file_is_a_spider_format_task(tmp_path: Path) -> None:
    build_database("shop.sql", tmp_path / "database")
    path = tmp_path / "questions.json"
    path.write_text(json.dumps([{"db_id": "shop", "question": "q", "query": "SELECT 1"}]))
    spec, examples = resolve_task(str(path), None)
    assert spec is SPIDER_FORMAT
    assert Path(examples[0].db_path).is_file()


def test_spider_test_layout_and_a_split_with_its_own_database_folder(tmp_path: Path) -> None:
    """Spider test's release layout (test.json + test_database/), as a task and as a path; the eval
    run has hardness levels; --db-root names any other folder."""
    build_database("shop.sql", tmp_path / "test_database")
    questions = [
        {"db_id": "shop", "question": "How many?", "query": "SELECT count(*) FROM item"},
        {"db_id": "shop", "question": "Fruit?", "query": "SELECT name FROM item WHERE category = 'fruit'"},
    ]
    (tmp_path / "test.json").write_text(json.dumps(questions))
    spec, examples = resolve_task("spider-test", tmp_path)
    assert (spec.name, spec.breakdown) == ("spider-test", "hardness")
    assert all(Path(e.db_path).is_file() and "test_database" in e.db_path for e in examples)
    _, by_path = resolve_task(str(tmp_path / "test.json"), None)
    assert [e.db_path for e in by_path] == [e.db_path for e in examples]
    predictions = tmp_path / "pred.txt"
    predictions.write_text("SELECT count(*) FROM item\nSELECT 1\n")
    result = runner.invoke(
        app,
        ["eval", "--task", "spider-test", "--data-dir", str(tmp_path), "--predictions", str(predictions),
         "--out", str(tmp_path / "out"), "--workers", "1", "--no-plots", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    assert (metrics["scored"], metrics["matched"]) == (2, 1)
    assert set(metrics["by_level"]) == {"easy"}
    moved = tmp_path / "elsewhere"
    (tmp_path / "test_database").rename(moved)
    result = runner.invoke(
        app,
        ["eval", "--task", str(tmp_path / "test.json"), "--db-root", str(moved), "--predictions", str(predictions),
         "--out", str(tmp_path / "out2"), "--workers", "1", "--no-plots", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["metrics"]["scored"] == 2
    assert summary["settings"]["task"]["db_root"] == str(moved)


def test_analysis_maps_tags_to_the_paper_categories() -> None:
    assert categories(("JOIN_MISSING", "GROUP_BY_ERROR", "HAVING_MISSING")) == frozenset({"JOIN", "GROUP"})
    report = analyze([("SELECT_ERROR", "JOIN_MISSING"), (), ("PARSE_ERROR",), ("WHERE_ERROR", "LIMIT_MISMATCH")])
    assert report["rates"] == {"SELECT": 0.25, "JOIN": 0.25, "WHERE": 0.25, "GROUP": 0.0}
    assert report["average"] == pytest.approx(0.1875)
    assert report["other_rates"] == {"other": 0.25, "nesting": 0.0, "parse": 0.25}
    assert report["any_tag_rate"] == 0.75
    assert list(report["tag_histogram"]) == ["SELECT_ERROR", "JOIN_MISSING", "WHERE_ERROR", "LIMIT_MISMATCH",
                                             "PARSE_ERROR"]  # fmt: skip
    assert analyze([])["average"] is None


@pytest.mark.shared_data
def test_bird_dev_runs_on_the_databases_present(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "bird"
    result = runner.invoke(
        app,
        ["eval", "--task", "bird-dev", "--data-dir", str(shared_data / "bird"), "--predictions",
         str(shared_data / "bird" / "dev_gold.sql"), "--out", str(out), "--workers", "2", "--no-plots", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    metrics = summary["metrics"]
    assert summary["settings"]["preset"]["name"] == "bird"
    assert (metrics["scored"], metrics["matched"], metrics["skipped"]) == (129, 129, 1534 - 129)
    assert list(metrics["by_level"]) == ["simple", "moderate", "challenging"]
    assert sum(block["scored"] for block in metrics["by_level"].values()) == 129
    assert Counter(metrics["skipped_examples"]["by_db_id"]).total() == 1405
    assert "superhero" not in metrics["skipped_examples"]["by_db_id"]
    assert any("1405 examples skipped" in note for note in summary["notes"])
    assert "1405 examples skipped, database file absent" in (out / "report.md").read_text()
