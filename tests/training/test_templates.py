"""Template generation over the embedded databases: balance, executability, disjoint splits."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from progress_sql.data.embedded import embedded_databases, real_questions
from progress_sql.execution.executor import execute
from progress_sql.training.templates import (
    FAMILIES,
    TemplateDataset,
    build_dataset,
    folded_sql,
    generate_pairs,
    identifier,
    literal,
    read_template_database,
)
from progress_sql.training.templates.wording import is_link
from tests.conftest import build_database


def _combos() -> dict[tuple[str, str, str], tuple[str, ...]]:
    """(db_id, question, family) -> (family, db_id, table, columns...): a pair's combination."""
    return {(p.db_id, p.question, p.family): (p.family, *p.combo) for p in generate_pairs(embedded_databases())}


def test_every_family_has_pairs_and_training_is_balanced(dataset: TemplateDataset) -> None:
    counts = dataset.family_counts()
    assert sorted(counts) == sorted(FAMILIES)
    assert sorted({example.difficulty for example in dataset.train}) == sorted(FAMILIES)
    # Tolerance: exact. Every family contributes the same number of training examples (250);
    # families with fewer distinct pairs repeat them.
    assert {total for total, _ in counts.values()} == {250}
    assert len(dataset.train) == 250 * len(FAMILIES)
    # The prototype's starved family: foreign-key joins now have as many distinct pairs as any.
    assert counts["fk_join"][1] == 250
    assert min(distinct for _, distinct in counts.values()) >= 15


def test_heldout_sets_are_spread_over_families(dataset: TemplateDataset) -> None:
    combo = Counter(e.difficulty for e in dataset.heldout_new_combo)
    value = Counter(e.difficulty for e in dataset.heldout_new_value)
    assert len(dataset.heldout_new_combo) == len(dataset.heldout_new_value) == 150
    assert set(combo) == set(FAMILIES)
    # Round-robin over families: families with few combinations (count, group_count) run out, and
    # the others share what is left evenly; no family exceeds its fair share by more than 30%.
    assert max(combo.values()) <= 1.3 * 150 / len(FAMILIES)
    assert max(value.values()) - min(value.values()) <= 1


def test_every_sql_executes_with_rows(dataset: TemplateDataset) -> None:
    sqls = {(e.db_path, e.gold_sql) for e in dataset.train + dataset.heldout_new_combo + dataset.heldout_new_value}
    assert len(sqls) > 1000
    for db_path, sql in sqls:
        assert sql == " ".join(sql.split())
        result = execute(db_path, sql)
        assert result.ok, (sql, result.error)
        assert result.rows, sql


def test_heldout_new_combo_never_shares_a_combination_with_training(dataset: TemplateDataset) -> None:
    combos = _combos()
    trained = {combos[e.db_id, e.question, e.difficulty] for e in dataset.train}
    held = {combos[e.db_id, e.question, e.difficulty] for e in dataset.heldout_new_combo}
    assert held
    assert not held & trained
    trained_sql = {folded_sql(e.gold_sql) for e in dataset.train}
    assert not {folded_sql(e.gold_sql) for e in dataset.heldout_new_combo} & trained_sql


def test_heldout_new_value_has_seen_combinations_and_unseen_sql(dataset: TemplateDataset) -> None:
    combos = _combos()
    trained = {combos[e.db_id, e.question, e.difficulty] for e in dataset.train}
    assert all(combos[e.db_id, e.question, e.difficulty] in trained for e in dataset.heldout_new_value)
    trained_sql = {folded_sql(e.gold_sql) for e in dataset.train}
    assert not {folded_sql(e.gold_sql) for e in dataset.heldout_new_value} & trained_sql
    assert not {e.question for e in dataset.heldout_new_value} & {e.question for e in dataset.train}


def test_real_questions_are_split_by_sql(dataset: TemplateDataset) -> None:
    train_sql = {folded_sql(e.gold_sql) for e in dataset.real_train}
    test_sql = {folded_sql(e.gold_sql) for e in dataset.real_test}
    assert not train_sql & test_sql
    assert len(dataset.real_train) + len(dataset.real_test) == len(real_questions()) == 87
    assert abs(len(train_sql) / (len(train_sql) + len(test_sql)) - 0.6) < 0.03
    assert all(Path(e.db_path).is_file() and e.difficulty is None for e in dataset.real_test)


def test_deterministic_for_a_seed(dataset: TemplateDataset) -> None:
    again = build_dataset(embedded_databases(), seed=0)
    assert again == dataset
    other = build_dataset(embedded_databases(), seed=1)
    assert other.heldout_new_combo != dataset.heldout_new_combo
    assert other.real_test != dataset.real_test


def test_examples_record_their_family_and_database(dataset: TemplateDataset) -> None:
    paths = {db_id: str(path) for db_id, path in embedded_databases().items()}
    for example in dataset.train[:200]:
        assert example.difficulty in FAMILIES
        assert example.db_path == paths[example.db_id]


def test_templates_work_on_another_schema(tmp_path: Path) -> None:
    path = build_database("music.sql", tmp_path)
    database = read_template_database(path)
    link = next(t for t in database.tables.values() if t.name == "singer_in_concert")
    assert is_link(link)
    assert len(link.foreign_keys) == 2
    data = build_dataset({"music": path}, seed=3, heldout_size=20, per_family=40)
    assert {e.difficulty for e in data.train} == set(FAMILIES)
    assert data.real_train == data.real_test == []
    assert len(data.heldout_new_combo) == 20
    joins = [e for e in data.train if e.difficulty == "fk_join"]
    assert any("JOIN singer_in_concert" in e.gold_sql for e in joins)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(3, "3"), (2.5, "2.5"), (12.0, "12"), ("2014", "2014"), ("Stark's Park", "'Stark''s Park'")],
)
def test_literals(value: object, expected: str) -> None:
    assert literal(value) == expected  # type: ignore[arg-type]


def test_identifiers_are_quoted_only_when_needed() -> None:
    assert identifier("Song_Name") == "song_name"
    assert identifier("odd name") == '"odd name"'
