"""Spider and BIRD loaders and the task registry, on small files written by the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.loaders import (
    SQLITE_HEADER,
    _header_problem,
    database_problem,
    file_problem,
    load_bird,
    load_spider,
    load_synsql,
    problem_kind,
)
from progress_sql.data.tasks import TASKS, load_task, resolve_task
from progress_sql.errors import DatasetError
from progress_sql.types import Example


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


# ---- data checks (docs/data.md#data-checks) ---------------------------------------------------------


CLIMBING_DB_IDS = ["..", "../music", "../../etc/passwd", "/etc/passwd", "a/b", "a\\b", "a\x00", "", "."]


@pytest.mark.parametrize("db_id", CLIMBING_DB_IDS)
def test_a_db_id_that_is_not_one_plain_name_never_leaves_the_databases_folder(db_id: str, tmp_path: Path) -> None:
    questions = tmp_path / "dev.json"
    questions.write_text(json.dumps([{"db_id": db_id, "question": "Q", "query": "SELECT 1"}]))
    (example,) = load_spider(questions, tmp_path / "database")
    assert example.db_path == str(tmp_path / "database")  # the folder itself: no reader opens it as a database
    assert database_problem(example) == f"db_id leaves the databases folder: {db_id!r}"


def test_database_problems_by_kind(tmp_path: Path, make_database: Any) -> None:
    good = make_database("music.sql", tmp_path / "database")
    cases = {"empty": b"", "short": b"SQLite", "text": b"hello\n", "header": SQLITE_HEADER + b"\xff" * 100}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "loop").symlink_to("loop")
    assert file_problem(good) is None
    assert file_problem(tmp_path / "empty") == f"database file empty: {tmp_path / 'empty'}"
    assert file_problem(tmp_path / "short") == f"not a SQLite database: {tmp_path / 'short'}"
    assert file_problem(tmp_path / "text") == f"not a SQLite database: {tmp_path / 'text'}"
    assert file_problem(tmp_path / "header") is None  # damaged past the header: found when its schema is read
    assert file_problem(tmp_path / "gone") == f"database file absent: {tmp_path / 'gone'}"
    assert file_problem(tmp_path / "empty" / "below") == f"database file absent: {tmp_path / 'empty' / 'below'}"
    assert file_problem(tmp_path) == f"database path is not a file: {tmp_path} (a folder)"
    assert (problem := file_problem(tmp_path / "loop")) is not None
    assert problem.startswith(f"database file unreadable: {tmp_path / 'loop'} (")
    assert {problem_kind(file_problem(tmp_path / name) or "") for name in ("empty", "text", "loop")} == {
        "database file empty", "not a SQLite database", "database file unreadable"}  # fmt: skip


def test_the_header_is_read_once_per_version_of_a_file(tmp_path: Path, make_database: Any) -> None:
    path = make_database("music.sql", tmp_path / "database")
    examples = [Example(i, "Q", "music", str(path), "SELECT 1") for i in range(50)]
    before = _header_problem.cache_info().misses
    assert all(database_problem(e) is None for e in examples)
    assert _header_problem.cache_info().misses == before + 1
    path.write_bytes(b"not a database any more")  # another size: read again, the verdict follows the file
    assert database_problem(examples[0]) == f"not a SQLite database: {path}"
    assert _header_problem.cache_info().misses == before + 2


def test_require_databases_refuses_only_a_data_set_with_none_usable(tmp_path: Path, make_database: Any) -> None:
    make_database("music.sql", tmp_path / "database")
    rows = [{"db_id": "music", "question": "Q", "query": "SELECT 1"}, {"db_id": "gone", "question": "Q", "query": "X"}]
    (tmp_path / "dev.json").write_text(json.dumps(rows))
    _, examples = resolve_task("spider-dev", tmp_path, need_databases=True)  # one usable database is enough
    assert [database_problem(e) is None for e in examples] == [True, False]
    (tmp_path / "dev.json").write_text(json.dumps(rows[1:] * 3))
    assert len(resolve_task("spider-dev", tmp_path)[1]) == 3  # export's way: no database needed
    with pytest.raises(DatasetError, match=r"no database of task spider-dev can be used \(3 examples: database file "
                                           r"absent 3\); first: database file absent: .*gone\.sqlite"):  # fmt: skip
        resolve_task("spider-dev", tmp_path, need_databases=True)
    with pytest.raises(DatasetError, match=r"databases folder not found: .*elsewhere"):
        resolve_task("spider-dev", tmp_path, db_root=tmp_path / "elsewhere", need_databases=True)
