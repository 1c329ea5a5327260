"""Behaviour tables of the presets (docs/semantics.md), on real SQLite results."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.errors import ConfigError
from progress_sql.execution.executor import execute
from progress_sql.judge.compare import describe, get_preset, judge
from progress_sql.judge.presets.spider import result_eq
from progress_sql.judge.sqltext import first_statement, strip_distinct
from progress_sql.types import ExecResult


def _ok(*rows: tuple[object, ...]) -> ExecResult:
    width = len(rows[0]) if rows else 1
    return ExecResult("ok", columns=tuple(f"c{i}" for i in range(width)), rows=tuple(rows))  # type: ignore[arg-type]


# (gold rows, pred rows, ordered, upstream verdict) from evaluation-semantics.md A.1.6
UPSTREAM_TABLE = [
    ([(1,)], [(1.0,)], False, True),
    ([(0.3,)], [(0.1 + 0.2,)], False, False),
    ([(None,)], [(None,)], False, True),
    ([(1,), (1,), (2,)], [(1,), (2,), (2,)], False, False),
    ([(1,), (1,)], [(1,)], False, False),
    ([(1,), (2,)], [(2,), (1,)], False, True),
    ([(1,), (2,)], [(2,), (1,)], True, False),
    ([(1, "a"), (2, "b")], [("a", 1), ("b", 2)], False, True),
    ([(1, "a"), (2, "b")], [("a", 1), ("b", 2)], True, True),
    ([], [], False, True),
    ([(1, "a")], [(1, "a", "x")], False, False),
    ([("Alice",)], [("alice",)], False, False),
    ([("1",)], [(1,)], False, False),
]


@pytest.mark.parametrize(("gold", "pred", "ordered", "expected"), UPSTREAM_TABLE)
def test_spider_result_eq_matches_upstream_table(
    gold: list[tuple[object, ...]], pred: list[tuple[object, ...]], ordered: bool, expected: bool
) -> None:
    assert result_eq(gold, pred, ordered).equal is expected  # type: ignore[arg-type]


def test_spider_rewrites_text_like_upstream() -> None:
    preset = get_preset("spider")
    (gold,) = preset.gold_queries('SELECT DISTINCT name FROM t WHERE c = "distinct" AND x > = 1')
    assert gold == 'SELECT  name FROM t WHERE c = "distinct" AND x >= 1'
    assert preset.prepare_pred("SELECT a FROM t; DROP TABLE t") == "SELECT a FROM t;"
    assert (
        get_preset("spider", keep_distinct=True).prepare_pred("SELECT DISTINCT a FROM t") == "SELECT DISTINCT a FROM t"
    )
    assert preset.prepare_pred("SELECT YEAR(CURDATE()) - age FROM t") == "SELECT 2020- age FROM t"
    assert strip_distinct("select count(distinct x) from t") == "select count( x) from t"
    assert first_statement("SELECT ';' FROM t; x") == "SELECT ';' FROM t;"


def test_spider_order_by_anywhere_makes_the_comparison_ordered() -> None:
    preset = get_preset("spider")
    gold = "SELECT a FROM t WHERE a IN (SELECT a FROM t ORDER BY a LIMIT 5)"
    assert not judge(preset, gold, [_ok((1,), (2,))], _ok((2,), (1,))).match
    assert judge(preset, "SELECT a FROM t", [_ok((1,), (2,))], _ok((2,), (1,))).match


def test_bird_is_set_semantics_with_positional_columns() -> None:
    preset = get_preset("bird")
    assert judge(preset, "", [_ok((1, "a"), (1, "a"))], _ok((1, "a"))).match
    assert not judge(preset, "", [_ok((1, "a"))], _ok(("a", 1))).match


def test_spider2_containment_tolerance_and_null_as_zero() -> None:
    preset = get_preset("spider2")
    gold = _ok((1.0, None), (2.0, 3))
    assert judge(preset, "SELECT a, b FROM t", [gold], _ok(("x", 3, 1.004), ("y", 0, 2.0))).match
    assert not judge(preset, "SELECT a, b FROM t", [gold], _ok((1.02, 0), (2.0, 3))).match


def test_strict_float_tolerance_and_types() -> None:
    preset = get_preset("strict")
    assert judge(preset, "SELECT a FROM t", [_ok((0.3,))], _ok((0.1 + 0.2,))).match
    assert not judge(preset, "SELECT a FROM t", [_ok(("1",))], _ok((1,))).match
    assert not judge(preset, "SELECT a FROM t", [_ok((None,))], _ok((0,))).match


def test_gold_failure_is_invalid_never_a_match() -> None:
    for name in ("spider", "bird", "spider2", "strict"):
        preset = get_preset(name)
        failed = ExecResult("error", error="no such table: t")
        verdict = judge(preset, "SELECT a FROM t", [failed], _ok((1,)))
        assert (verdict.match, verdict.status) == (False, "gold_invalid")
        timed_out = ExecResult("timeout", error="exceeded 1 s")
        assert judge(preset, "SELECT a FROM t", [timed_out], _ok((1,))).status == "gold_invalid"
        truncated = ExecResult("ok", columns=("a",), rows=((1,),), truncated=True)
        assert not judge(preset, "SELECT a FROM t", [_ok((1,))], truncated).match


def test_unknown_preset_and_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown preset"):
        get_preset("nope")
    with pytest.raises(ConfigError, match="bad options"):
        get_preset("bird", keep_distinct=True)
    assert describe(get_preset("strict"))["name"] == "strict"


# --- strict: ties at a LIMIT boundary, with the ORDER BY key outside the projection -------------

TIE_GOLD = "SELECT name FROM player ORDER BY score DESC LIMIT 2"


def _strict_gold(db: Path, gold_sql: str) -> list[ExecResult]:
    return [execute(db, sql) for sql in get_preset("strict").gold_queries(gold_sql)]


@pytest.mark.parametrize("second", ["p2", "p3", "p4"])
def test_strict_accepts_every_member_of_a_tie_at_the_limit(compare_db: Path, second: str) -> None:
    gold = _strict_gold(compare_db, TIE_GOLD)
    assert len(gold) == 2  # the gold ran once more, without LIMIT and with its keys
    pred = execute(compare_db, f"SELECT name FROM player WHERE name IN ('p1', '{second}') ORDER BY score DESC, name")
    assert judge(get_preset("strict"), TIE_GOLD, gold, pred).match


def test_strict_rejects_outside_the_tie_or_out_of_order(compare_db: Path) -> None:
    gold = _strict_gold(compare_db, TIE_GOLD)
    preset = get_preset("strict")
    wrong_member = execute(compare_db, "SELECT name FROM player WHERE name IN ('p1', 'p5') ORDER BY score DESC")
    assert not judge(preset, TIE_GOLD, gold, wrong_member).match
    reversed_order = execute(compare_db, "SELECT name FROM player WHERE name IN ('p1', 'p3') ORDER BY score ASC")
    assert not judge(preset, TIE_GOLD, gold, reversed_order).match


def test_strict_ties_without_limit_accept_any_order_inside_a_group(compare_db: Path) -> None:
    gold_sql = "SELECT name FROM singer ORDER BY age"
    gold = _strict_gold(compare_db, gold_sql)
    pred = execute(compare_db, "SELECT name FROM singer ORDER BY age, name DESC")
    assert judge(get_preset("strict"), gold_sql, gold, pred).match
    assert not judge(get_preset("spider"), gold_sql, gold[:1], pred).match  # upstream: all-or-nothing


def test_strict_order_keys_by_position_and_alias(compare_db: Path) -> None:
    preset = get_preset("strict")
    for gold_sql in (
        "SELECT country, count(*) AS n FROM singer GROUP BY country ORDER BY n DESC LIMIT 1",
        "SELECT country, count(*) FROM singer GROUP BY country ORDER BY 2 DESC LIMIT 1",
    ):
        gold = _strict_gold(compare_db, gold_sql)
        assert len(gold) == 2
        assert gold[1].ok
        assert judge(preset, gold_sql, gold, gold[0]).match


def test_strict_keeps_distinct_and_spider_strips_it(compare_db: Path) -> None:
    gold_sql = "SELECT DISTINCT country FROM singer"
    pred_sql = "SELECT country FROM singer"
    strict, spider = get_preset("strict"), get_preset("spider")
    assert not judge(strict, gold_sql, _strict_gold(compare_db, gold_sql), execute(compare_db, pred_sql)).match
    spider_gold = [execute(compare_db, q) for q in spider.gold_queries(gold_sql)]
    assert judge(spider, gold_sql, spider_gold, execute(compare_db, spider.prepare_pred(pred_sql))).match
