"""The peers' rewards against hand-computed values, and every registered reward within its range."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progress_sql.errors import ConfigError
from progress_sql.rewards.baselines import arctic, one_shot, reasoning_sql, schema_items, sql_r1
from progress_sql.rewards.context import RewardContext
from progress_sql.rewards.registry import REWARDS, get_reward
from progress_sql.types import Trajectory, Turn

GOLD = "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id"
CONTEXT = RewardContext(GOLD, max_response_chars=100)


def single(sql: str | None, format_ok: bool, executable: bool, match: bool, response: str = "") -> Trajectory:
    return Trajectory((Turn(sql, format_ok, executable, match, 0.0, response),))


@pytest.mark.parametrize(
    ("format_ok", "executable", "match", "expected"),
    [(True, True, True, 3.0), (True, True, False, 1.0), (False, True, False, 0.5), (False, False, False, 0.0)],
)
def test_one_shot(format_ok: bool, executable: bool, match: bool, expected: float) -> None:
    assert one_shot(single("SELECT 1", format_ok, executable, match), CONTEXT).total == expected


@pytest.mark.parametrize(
    ("executable", "match", "expected"), [(True, True, 1.0), (True, False, 0.1), (False, False, 0.0)]
)
def test_arctic(executable: bool, match: bool, expected: float) -> None:
    assert arctic(single("SELECT 1", True, executable, match), CONTEXT).total == expected


def test_sql_r1_match_with_length_bonus() -> None:
    response = "x" * 40 + "SELECT name FROM singer"  # 63 chars, SQL 23 of them, budget 100
    result = sql_r1(single("SELECT name FROM singer", True, True, True, response), CONTEXT)
    assert dict(result.components) == pytest.approx(
        {"fmt": 1.0, "exec": 2.0, "result": 3.0, "length": 0.5 * 0.63 + 23 / 63}
    )


def test_sql_r1_failure_has_no_length_bonus() -> None:
    result = sql_r1(single(None, False, False, False, "garbage"), CONTEXT)
    assert result.total == -6.0


def test_reasoning_sql_partial_credit() -> None:
    pred = "SELECT T1.name FROM singer AS T1"
    result = reasoning_sql(single(pred, True, True, False), CONTEXT)
    parts = dict(result.components)
    # schema items: pred {singer, name} vs gold {singer, concert, name, singer_id}: 2 / 4
    assert parts["schema"] == pytest.approx(0.3 * 0.5)
    assert parts["syntax"] == 0.2
    assert parts["fmt"] == 0.2
    assert parts["exec"] == 0.0
    assert 0 < parts["ngram"] < 0.3


def test_schema_items() -> None:
    assert schema_items(GOLD) == {"table:singer", "table:concert", "column:name", "column:singer_id"}
    assert schema_items("SELECT FROM WHERE (") == frozenset()


def test_unknown_reward_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="progressive"):
        get_reward("nope")


turns = st.builds(
    Turn,
    sql=st.one_of(st.none(), st.sampled_from(["SELECT 1", GOLD, "SELEC x", ""]), st.text(max_size=30)),
    format_ok=st.booleans(),
    executable=st.booleans(),
    match=st.booleans(),
    f=st.floats(allow_nan=True),
    response=st.text(max_size=300),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(turns, max_size=5), st.sampled_from(sorted(REWARDS)))
def test_every_reward_is_finite_and_within_its_declared_range(turn_list: list[Turn], name: str) -> None:
    spec = REWARDS[name]
    result = spec.score(Trajectory(tuple(turn_list)), CONTEXT)
    low, high = spec.value_range
    assert math.isfinite(result.total)
    assert low - 1e-9 <= result.total <= high + 1e-9
    assert result.version == spec.version
    assert spec.identity(CONTEXT) == (result.version, result.config_hash)  # what a reused breakdown must match
