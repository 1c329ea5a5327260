"""Invariants of the comparison presets, checked with hypothesis on result values."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from progress_sql.judge.compare import get_preset, judge
from progress_sql.types import ExecResult, Row

values = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.sampled_from([0.5, 1.25, 2.0]),
    st.sampled_from(["a", "b", "c"]),
)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[Row], list[int], list[int]]:
    width = draw(st.integers(1, 4))
    rows = draw(st.lists(st.tuples(*[values] * width), min_size=1, max_size=8))
    row_order = draw(st.permutations(list(range(len(rows)))))
    column_order = draw(st.permutations(list(range(width))))
    return rows, list(row_order), list(column_order)


def _result(rows: list[Row]) -> ExecResult:
    width = len(rows[0]) if rows else 1
    return ExecResult("ok", columns=tuple(f"c{i}" for i in range(width)), rows=tuple(rows))


GOLD = "SELECT a FROM t"  # no ORDER BY: row order must not matter


@settings(max_examples=150, deadline=None)
@given(tables())
def test_permuting_rows_and_columns_keeps_spider_and_strict_verdicts(
    case: tuple[list[Row], list[int], list[int]],
) -> None:
    rows, row_order, column_order = case
    shuffled = [tuple(rows[r][c] for c in column_order) for r in row_order]
    for name in ("spider", "strict"):
        preset = get_preset(name)
        assert judge(preset, GOLD, [_result(rows)], _result(shuffled)).match, name


@settings(max_examples=150, deadline=None)
@given(tables(), st.data())
def test_permutation_keeps_verdict_against_a_different_result(
    case: tuple[list[Row], list[int], list[int]], data: st.DataObject
) -> None:
    rows, _row_order, column_order = case
    other = data.draw(st.lists(st.tuples(*[values] * len(rows[0])), min_size=1, max_size=8))
    shuffled = [tuple(other[r][c] for c in column_order) for r in range(len(other))]
    shuffled = [shuffled[i] for i in data.draw(st.permutations(list(range(len(shuffled)))))]
    for name in ("spider", "strict"):
        preset = get_preset(name)
        plain = judge(preset, GOLD, [_result(rows)], _result(other)).match
        permuted = judge(preset, GOLD, [_result(rows)], _result(shuffled)).match
        assert plain == permuted, name


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=6), st.integers(0, 5))
def test_bag_differs_from_set_when_duplicates_differ(base: list[int], extra_index: int) -> None:
    gold_rows: list[Row] = [(v,) for v in base]
    duplicated = [*gold_rows, gold_rows[extra_index % len(gold_rows)]]
    gold, pred = _result(gold_rows), _result(duplicated)
    assert judge(get_preset("bird"), GOLD, [gold], pred).match  # a set ignores the extra duplicate
    assert not judge(get_preset("strict"), GOLD, [gold], pred).match  # a bag does not
    assert not judge(get_preset("spider"), GOLD, [gold], pred).match


def test_same_length_bags_with_different_multiplicities() -> None:
    gold, pred = _result([(1,), (1,), (2,)]), _result([(1,), (2,), (2,)])
    assert judge(get_preset("bird"), GOLD, [gold], pred).match
    assert not judge(get_preset("spider"), GOLD, [gold], pred).match
    assert not judge(get_preset("strict"), GOLD, [gold], pred).match
