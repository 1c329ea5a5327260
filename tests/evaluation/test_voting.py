"""Majority voting by execution result and pass@k, on constructed sample sets with known answers."""

from __future__ import annotations

from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progress_sql.evaluation.voting import k_values, majority_vote, pass_at_k
from progress_sql.judge.compare import get_preset
from progress_sql.judge.presets.spider import canonical_rows
from progress_sql.types import ExecResult, Row

GOLD = "SELECT a FROM t"
ORDERED_GOLD = "SELECT a FROM t ORDER BY a"


def ok(*rows: Row) -> ExecResult:
    return ExecResult("ok", columns=tuple(f"c{i}" for i in range(len(rows[0]) if rows else 1)), rows=rows)


ERROR = ExecResult("error", error="no such column")
TIMEOUT = ExecResult("timeout")
TRUNCATED = ExecResult("ok", columns=("a",), rows=((1,),), truncated=True)


def test_largest_group_wins() -> None:
    vote = majority_vote(GOLD, [ok((1,)), ok((2,)), ok((2,)), ok((2,)), ok((1,))], get_preset("spider"))
    assert vote.chosen == 1
    assert vote.groups == ((0, 4), (1, 2, 3))
    assert vote.share == pytest.approx(3 / 5)
    assert vote.rule == "key"


def test_tie_goes_to_the_earliest_sample() -> None:
    results = [ERROR, ok((2,)), ok((1,)), ok((1,)), ok((2,))]
    vote = majority_vote(GOLD, results, get_preset("spider"))
    assert vote.sizes == (2, 2)
    assert vote.chosen == 1  # the group of sample 1 appears first
    reordered = majority_vote(GOLD, [ok((1,)), ok((2,)), ok((2,)), ok((1,))], get_preset("spider"))
    assert reordered.chosen == 0


def test_invalid_samples_never_vote() -> None:
    results = [ERROR, None, TIMEOUT, TRUNCATED, ERROR, ok((3,))]
    vote = majority_vote(GOLD, results, get_preset("spider"))
    assert vote.chosen == 5  # one valid sample beats four invalid ones
    assert vote.valid == 1


@pytest.mark.parametrize("preset", ["spider", "bird", "strict", "spider2"])
def test_all_invalid_has_no_answer(preset: str) -> None:
    vote = majority_vote(GOLD, [ERROR, None, TIMEOUT, TRUNCATED], get_preset(preset))
    assert vote.chosen is None
    assert vote.groups == ()
    assert vote.share == 0.0


def test_bag_versus_set_semantics() -> None:
    # Equal as sets, different as bags: bird groups them, spider does not.
    results = [ok((1,), (1,), (2,)), ok((1,), (2,)), ok((2,), (1,), (2,)), ok((1,), (2,))]
    spider = majority_vote(GOLD, results, get_preset("spider"))
    bird = majority_vote(GOLD, results, get_preset("bird"))
    assert spider.groups == ((0,), (1, 3), (2,))
    assert spider.chosen == 1
    assert bird.groups == ((0, 1, 2, 3),)
    assert bird.chosen == 0


def test_order_and_column_permutations_under_spider() -> None:
    forward, backward = ok((1, "a"), (2, "b")), ok(("b", 2), ("a", 1))
    assert majority_vote(GOLD, [forward, backward], get_preset("spider")).groups == ((0, 1),)
    # Ordered gold: the row order now matters, the column order still does not.
    swapped_rows = ok(("a", 1), ("b", 2))
    assert majority_vote(ORDERED_GOLD, [forward, backward, swapped_rows], get_preset("spider")).groups == (
        (0, 2),
        (1,),
    )
    # bird compares columns by position.
    assert majority_vote(GOLD, [forward, backward], get_preset("bird")).groups == ((0,), (1,))


def test_empty_results_vote_together_whatever_their_width() -> None:
    empty_one = ExecResult("ok", columns=("a",), rows=())
    empty_two = ExecResult("ok", columns=("a", "b"), rows=())
    assert majority_vote(GOLD, [empty_one, empty_two], get_preset("spider")).groups == ((0, 1),)


def test_non_transitive_preset_joins_the_first_matching_representative() -> None:
    # strict: numbers equal within rel_tol 1e-6. 1.0 ~ 1.0000006 ~ 1.0000012, but 1.0 !~ 1.0000012.
    results = [ok((1.0,)), ok((1.0000012,)), ok((1.0000006,)), ok((1.0000012,))]
    vote = majority_vote(GOLD, results, get_preset("strict"))
    assert vote.rule == "representative"
    assert vote.groups == ((0, 2), (1, 3))
    assert vote.chosen == 0  # a tie between two groups of two: the earliest


def test_pass_at_k_known_values() -> None:
    assert pass_at_k(8, 0, 1) == 0.0
    assert pass_at_k(8, 8, 1) == 1.0
    assert pass_at_k(8, 2, 1) == pytest.approx(0.25)
    assert pass_at_k(8, 2, 4) == pytest.approx(1 - comb(6, 4) / comb(8, 4))
    assert pass_at_k(8, 5, 4) == 1.0  # fewer than k wrong samples: some correct sample is always drawn
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(4, 5, 1)
    with pytest.raises(ValueError, match="pass@k needs"):
        pass_at_k(4, 1, 5)
    assert (pass_at_k(4, 0, 2), pass_at_k(4, 3, 2), pass_at_k(4, 1, 1)) == (0.0, 1.0, 0.25)


def test_k_values_are_the_powers_of_two_below_n_and_n() -> None:
    assert (k_values(8), k_values(5), k_values(1)) == ((1, 2, 4, 8), (1, 2, 4, 5), (1,))


@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_is_a_probability_growing_with_k(args: tuple[int, int, int]) -> None:
    n, c, k = args
    value = pass_at_k(n, c, k)
    assert 0.0 <= value <= 1.0
    if k < n:
        assert pass_at_k(n, c, k + 1) >= value - 1e-12
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)


_values = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from(["a", "b"]), st.none())


@st.composite
def results_sets(draw: st.DrawFn) -> list[ExecResult]:
    width = draw(st.integers(1, 3))
    base = draw(st.lists(st.tuples(*[_values] * width), min_size=0, max_size=4))
    samples = []
    for _ in range(draw(st.integers(1, 6))):
        rows = list(base) if draw(st.booleans()) else draw(st.lists(st.tuples(*[_values] * width), max_size=4))
        rows = draw(st.permutations(rows))
        permutation = draw(st.permutations(range(width)))
        samples.append(ok(*(tuple(row[j] for j in permutation) for row in rows)))
    return samples


@settings(max_examples=150, deadline=None)
@given(results_sets(), st.sampled_from([GOLD, ORDERED_GOLD]), st.sampled_from(["spider", "bird"]))
def test_canonical_keys_group_as_the_equality_does(results: list[ExecResult], gold: str, name: str) -> None:
    preset = get_preset(name)
    by_key = majority_vote(gold, results, preset)
    assert by_key.rule == "key"
    for group in by_key.groups:  # every member equals its representative
        for member in group:
            assert preset.equal(gold, (results[group[0]],), results[member]).equal
    representatives = [g[0] for g in by_key.groups]
    for i, a in enumerate(representatives):  # and representatives of different groups differ
        for b in representatives[i + 1 :]:
            assert not preset.equal(gold, (results[a],), results[b]).equal


def test_too_many_interchangeable_columns_fall_back_to_representatives() -> None:
    wide = ok(tuple([1] * 7), tuple([1] * 7))
    assert canonical_rows(list(wide.rows), False) is None
    assert majority_vote(GOLD, [wide, wide], get_preset("spider")).rule == "representative"
