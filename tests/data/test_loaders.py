"""Spider and BIRD loaders and the task registry, on small files written by the tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from progress_sql.data.loaders import load_bird, load_spider, load_synsql
from progress_sql.data.tasks import TASKS, load_task
from progress_sql.errors import DatasetError


def test_spider_format(tmp_path: Path) -> None:
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps([{"db_id": "x", "question": "How many?", "query": "SELECT 1"}]))
    (example,) = load_spider(questions, tmp_path / "database")
    assert example.index == 0
    assert example.gold_sql == "SELECT 1"
    assert example.evidence == ""
    assert example.db_path == str(tmp_path / "database" / "x" / "x.sqlite")


def test_bird_format(tmp_path: Path) -> None:
    questions = tmp_path / "dev.json"
    item = {
        "question_id": 0,
        "db_id": "s",
        "question": "Q",
        "evidence": "E",
        "SQL": "SELECT 2",
        "difficulty": "simple",
    }
    questions.write_text(json.dumps([item]))
    (example,) = load_bird(questions, tmp_path / "dev_databases")
    assert (example.evidence, example.difficulty, example.gold_sql) == ("E", "simple", "SELECT 2")


def test_bad_files_raise_dataset_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_spider(tmp_path / "absent.json", tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    with pytest.raises(DatasetError, match="list"):
        load_spider(bad, tmp_path)
    with pytest.raises(DatasetError, match="unknown task"):
        load_task("nope-dev", tmp_path)
    with pytest.raises(DatasetError, match="--data-dir"):
        load_task("spider-dev", None)


def test_task_from_a_path_resolves_databases_beside_it(tmp_path: Path) -> None:
    questions = tmp_path / "mine.json"
    questions.write_text(json.dumps([{"db_id": "d", "question": "Q", "query": "SELECT 1"}]))
    (example,) = load_task(str(questions), None)
    assert example.db_path == str(tmp_path / "database" / "d" / "d.sqlite")


@pytest.mark.shared_data
def test_registered_tasks_load_the_real_files(shared_data: Path) -> None:
    spider = TASKS["spider-dev"].load(shared_data / "spider")
    bird = load_task("bird-dev", shared_data / "bird")
    assert len(spider) == 1034
    assert len(bird) == 1534
    assert sum(Path(e.db_path).is_file() for e in spider) == 972  # wta_1 is absent
    assert {e.difficulty for e in bird} == {"simple", "moderate", "challenging"}


def test_synsql_rows_from_json_lines(tmp_path: Path) -> None:
    row = {"db_id": "s", "question": "Q", "external_knowledge": "K", "sql": "SELECT 3", "sql_complexity": "Simple"}
    questions = tmp_path / "data.jsonl"
    questions.write_text(json.dumps(row) + "\n\n" + json.dumps({**row, "question": "R"}) + "\n")
    first, second = load_synsql(questions, tmp_path / "databases")
    assert (first.question, first.evidence, first.gold_sql, first.difficulty) == ("Q", "K", "SELECT 3", "Simple")
    assert (second.index, second.question) == (1, "R")
    assert first.db_path == str(tmp_path / "databases" / "s" / "s.sqlite")
    (tmp_path / "data.json").write_text(json.dumps([row]))
    assert load_task("synsql", tmp_path)[0].gold_sql == "SELECT 3"


@pytest.mark.shared_data
def test_synsql_sample(shared_data: Path) -> None:
    examples = load_synsql(shared_data / "synsql-sample" / "synsql_1000.jsonl", shared_data / "synsql-sample")
    assert len(examples) == 1000
    assert all(e.gold_sql and e.question and e.difficulty for e in examples)
    assert not any(Path(e.db_path).is_file() for e in examples)  # the sample ships without databases
