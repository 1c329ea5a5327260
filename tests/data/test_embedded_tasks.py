"""Golden fixtures of the embedded write tasks and ambiguous questions: every reference script passes
every check it states, every plausible wrong script fails one and the ODT names its clause; every
ambiguous question is labelled, runs, and its example clarifying questions reach its slot."""

from __future__ import annotations

import json
from typing import Any

import pytest

from progress_sql.data.embedded import EMBEDDED_DIR, WRITE_TASKS_FILE, ambiguous_questions, real_questions, write_tasks
from progress_sql.data.tasks import resolve_task
from progress_sql.env.user import SimulatedUser
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.judge.write import judge_write
from progress_sql.odt import diagnose
from progress_sql.types import Example

ROWS: list[dict[str, Any]] = json.loads((EMBEDDED_DIR / WRITE_TASKS_FILE).read_text(encoding="utf-8"))
TASKS = write_tasks()
#: The tags that name the clause each kind of mistake is in.
CLAUSE_TAGS = {
    "where": {"DML_WHERE_MISSING", "DML_WHERE_REDUNDANT", "DML_WHERE_ERROR", "INSERT_SOURCE_ERROR"},
    "set": {"SET_ERROR"},
    "target": {"DML_TARGET_MISMATCH"},
    "columns": {"INSERT_COLUMNS_MISMATCH"},
    "values": {"INSERT_VALUES_MISMATCH"},
}


@pytest.fixture(scope="module")
def store() -> Any:
    with GoldStore(get_preset("strict")) as gold_store:
        yield gold_store


def test_the_embedded_sets_cover_the_templates_and_the_mistakes() -> None:
    assert len(TASKS) >= 8
    assert {e.difficulty for e in TASKS} == {"update_filter", "delete_filter", "insert_values", "insert_select"}
    assert {"where", "set", "target"} <= {w["mistake"] for row in ROWS for w in row["wrong"]}
    assert all(row["wrong"] for row in ROWS)
    assert all(e.kind == "write" and e.write is not None and e.write.checks for e in TASKS)
    assert resolve_task("embedded-write", None)[1] == TASKS


@pytest.mark.parametrize("position", range(len(TASKS)), ids=[e.question[:40] for e in TASKS])
def test_reference_passes_and_wrong_scripts_fail_a_check(store: GoldStore, position: int) -> None:
    example, row = TASKS[position], ROWS[position]
    assert example.write is not None
    gold = store.require(example)
    assert all(check.expected is not None for check in example.write.checks)  # the file states its results
    assert judge_write(example.write, gold.results[0], gold.results[0]).verdict.match
    assert store.judge(example, example.gold_sql).match
    for wrong in row["wrong"]:
        verdict = judge_write(example.write, gold.results[0], store.run_pred(example, wrong["sql"]))
        assert not verdict.verdict.match, wrong["sql"]
        assert verdict.passed < verdict.total
        tags = set(diagnose(wrong["sql"], gold.reference).tags)
        assert tags == set(wrong["tags"]), wrong["sql"]
        assert tags & CLAUSE_TAGS[wrong["mistake"]], f"{wrong['sql']}: {tags} names no {wrong['mistake']} clause"


def test_ambiguous_questions_are_labelled_spider_dev_questions(store: GoldStore) -> None:
    examples = ambiguous_questions()
    assert len(examples) >= 50
    assert resolve_task("embedded-ambiguous", None)[1] == examples
    originals = {(e.db_id, e.gold_sql, e.question) for e in real_questions()}
    rows = json.loads((EMBEDDED_DIR / "ambiguous_questions.json").read_text(encoding="utf-8"))
    user = SimulatedUser(seed=0)
    for example, row in zip(examples, rows, strict=True):
        assert (example.db_id, example.gold_sql, row["original_question"]) in originals
        assert example.question != row["original_question"]
        assert example.kind == "ambiguous"
        assert store.prepare(example).error is None
        for slot in example.ambiguity:
            assert slot.questions, slot.name
            for question in slot.questions:
                reply = user.answer(example, question)
                assert reply.slot == slot.name, question
                assert slot.interpretation in reply.text
        assert user.answer(example, "Could you say that again?").slot is None


def test_a_malformed_write_entry_is_a_clear_error(tmp_path: Any) -> None:
    from progress_sql.data.loaders import load_spider
    from progress_sql.errors import DatasetError

    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([{"db_id": "d", "question": "q", "query": "DELETE FROM t", "write": {"tables": []}}]))
    with pytest.raises(DatasetError, match="example 0: write: tables must not be empty"):
        load_spider(path, tmp_path)


def test_examples_round_trip_through_the_export_codec() -> None:
    from progress_sql.export.formats import example_fields, example_from_fields

    for example in [TASKS[0], ambiguous_questions()[0]]:
        assert example_from_fields(example_fields(example)) == example
    plain: Example = real_questions()[0]
    assert example_fields(plain)["task_spec"] == ""
