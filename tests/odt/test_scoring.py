"""Scoring conventions, configuration and the schema-aware double-quote rule."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from progress_sql.data.schema import Schema, read_schema
from progress_sql.errors import ConfigError
from progress_sql.odt import FeatureWeights, OdtConfig, build_odt, diagnose
from progress_sql.odt.score import feature_similarities, num_sim
from progress_sql.sql.parse import ParseFailure


def test_literal_change_keeps_structure_and_lowers_f() -> None:
    diagnosis = diagnose("SELECT name FROM singer WHERE age > 40", "SELECT name FROM singer WHERE age > 30")
    assert diagnosis.f_struct == 1.0
    assert diagnosis.tags == ()
    assert diagnosis.f < 1.0
    assert "expected clause structure" in diagnosis.feedback


def test_double_quoted_literal_scores_one_lexically_too() -> None:
    diagnosis = diagnose('SELECT a FROM t WHERE b = "x"', "SELECT a FROM t WHERE b = 'x'")
    assert (diagnosis.f_struct, diagnosis.f_lex, diagnosis.tags) == (1.0, 1.0, ())


def test_numsim_uses_gold_as_denominator() -> None:
    assert num_sim(4, 2) == 0.0
    assert num_sim(1, 2) == 0.5
    assert num_sim(0, 0) == 1.0


def test_alpha_changes_the_weight_of_children() -> None:
    pred = "SELECT name FROM singer WHERE age > 30"
    gold = "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)"
    assert diagnose(pred, gold).f_struct == pytest.approx(0.7 * 0.85)
    assert diagnose(pred, gold, config=OdtConfig(alpha=0.5)).f_struct == pytest.approx(0.5 * 0.85)


def test_weights_are_normalized_by_their_sum() -> None:
    doubled = FeatureWeights(**{name: 2 * value for name, value in FeatureWeights().as_dict().items()})
    pred, gold = "SELECT age FROM singer", "SELECT name FROM singer"
    assert diagnose(pred, gold, config=OdtConfig(weights=doubled)).f_struct == pytest.approx(0.8)


@pytest.mark.parametrize(
    "kwargs",
    [{"alpha": 1.5}, {"alpha": -0.1}, {"set_op_weight": 2.0}, {"thresholds": {"WHERE_ERROR": 1.2}}],
)
def test_invalid_config_is_rejected_with_the_field_name(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        OdtConfig(**kwargs)  # type: ignore[arg-type]


def test_negative_weight_is_rejected() -> None:
    with pytest.raises(ConfigError, match="select"):
        FeatureWeights(select=-1.0)


def test_feature_similarities_cover_every_feature() -> None:
    tree = build_odt("SELECT a FROM t")
    assert not isinstance(tree, ParseFailure)
    profile = tree.children[0].profile
    assert profile is not None
    sims = feature_similarities(profile, profile)
    assert set(FeatureWeights().as_dict()) <= set(sims)
    assert all(value == 1.0 for value in sims.values())


def test_schema_decides_double_quoted_tokens() -> None:
    schema = Schema.from_mapping({"singer": ["name", "country"]})
    # "country" names a column: a column comparison; "France" names none: a literal.
    column = build_odt('SELECT name FROM singer WHERE name = "country"', schema)
    literal = build_odt('SELECT name FROM singer WHERE name = "France"', schema)
    assert not isinstance(column, ParseFailure)
    assert not isinstance(literal, ParseFailure)
    assert column.children[0].profile is not None
    assert literal.children[0].profile is not None
    assert column.children[0].profile.where == frozenset({"singer.country = singer.name"})
    assert literal.children[0].profile.where == frozenset({"singer.name = ?"})


def test_schema_qualifies_unqualified_columns_across_joins(tmp_path: Path) -> None:
    db = tmp_path / "music.sqlite"
    with sqlite3.connect(db) as connection:
        connection.executescript(
            "CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, singer_id INTEGER, year INTEGER);"
        )
    connection.close()
    schema = read_schema(db)
    gold = "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id WHERE T2.year = 1"
    pred = "SELECT name FROM singer JOIN concert ON singer.singer_id = concert.singer_id WHERE year = 2"
    assert diagnose(pred, gold, schema).tags == ()
    assert diagnose(pred, gold, schema).f_struct == 1.0
    # without a schema the unqualified columns cannot be placed in a two-table query
    assert diagnose(pred, gold).f_struct < 1.0


def test_deeply_nested_scalar_subqueries_are_linear() -> None:
    # Each level once: a double count would make this exponential (2^40 comparisons).
    sql = "SELECT " + "(SELECT " * 40 + "a" + ")" * 40 + " FROM t"
    tree = build_odt(sql)
    assert not isinstance(tree, ParseFailure)
    depth, node = 0, tree.children[0]
    while node.children:
        node = node.children[0].children[0]
        depth += 1
    assert depth == 40
    assert diagnose(sql, sql).f_struct == 1.0


def test_pathological_whitespace_and_quotes_are_handled() -> None:
    # strip_sql and the lexical tokenizer are linear: these return at once instead of taking hours
    assert diagnose("SELECT a" + " " * 19_000 + "FROM t", "SELECT a FROM t").f_struct == 1.0
    for text in ("[" * 300_000, "`" * 300_000, "'" * 300_000, ";" * 300_000 + " "):
        diagnosis = diagnose(text, "SELECT a FROM t")
        assert diagnosis.status == "pred_unparsable"
        assert 0.0 <= diagnosis.f_lex <= 1.0
