"""The progressive reward against hand-computed values (defaults: fmt .5, keep .5, rec .5, det -.5,
acc 2.0, gamma .5, align+ .5, align- -.1)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from progress_sql.errors import ConfigError
from progress_sql.rewards.progressive import (
    ProgressiveConfig,
    progressive_reward,
    reward_range,
    upper_bound,
    upper_bound_curve,
)
from progress_sql.types import Trajectory, Turn


def turn(executable: bool = True, match: bool = False, f: float = 0.5, format_ok: bool = True) -> Turn:
    return Turn("SELECT 1", format_ok, executable, match, f)


def components(trajectory: Trajectory, **config: object) -> dict[str, float]:
    result = progressive_reward(trajectory, ProgressiveConfig(**config))  # type: ignore[arg-type]
    values = dict(result.components)
    values["total"] = result.total
    return values


def test_the_guard_claims_no_progress_from_a_garbage_first_turn() -> None:
    first_try = Trajectory((Turn("SELECT 1", True, True, True, 0.9),))
    assert progressive_reward(first_try).total == 2.9  # 0.5 fmt + 0.5 keep + 2.0 late - 0.1 align (Delta = 0)
    garbage_then_right = Trajectory((Turn(None, False, False, False, 0.0), Turn("SELECT 1", True, True, True, 0.97)))
    assert progressive_reward(garbage_then_right, ProgressiveConfig(formula="paper")).total == 2.485  # 0.5+0.5+1+0.485
    assert progressive_reward(garbage_then_right).total == 1.9  # 0.5 + 0.5 + 1.0 - 0.1


def test_first_turn_success() -> None:
    values = components(Trajectory((turn(match=True, f=0.95),)))
    assert values == pytest.approx({"fmt": 0.5, "exec": 0.5, "late": 2.0, "align": -0.1, "total": 2.9})


def test_first_turn_success_without_the_align_penalty() -> None:
    values = components(Trajectory((turn(match=True),)), no_align_penalty_on_first_turn_success=True)
    assert values["align"] == 0.0
    assert values["total"] == pytest.approx(3.0)


def test_recovery_from_invalid_sql_with_success_at_turn_three() -> None:
    trajectory = Trajectory((turn(executable=False, f=0.2), turn(f=0.6), turn(match=True, f=0.9)))
    # paper: fmt .5, recover .5, late 2 * .5^2 = .5, align .5 * (.9 - .2) = .35
    assert components(trajectory, formula="paper") == pytest.approx(
        {"fmt": 0.5, "exec": 0.5, "late": 0.5, "align": 0.35, "total": 1.85}
    )
    # default: turn 1 is no attempt, so no progress is claimed from it: align -.1
    assert components(trajectory) == pytest.approx({"fmt": 0.5, "exec": 0.5, "late": 0.5, "align": -0.1, "total": 1.4})


def test_deterioration() -> None:
    trajectory = Trajectory((turn(f=0.6), turn(f=0.5), turn(executable=False, f=0.3), turn(executable=False, f=0.4)))
    # fmt .5, det -.5, no match, Delta = -.2 -> align -.1
    assert components(trajectory) == pytest.approx(
        {"fmt": 0.5, "exec": -0.5, "late": 0.0, "align": -0.1, "total": -0.1}
    )


def test_stagnation_pays_the_negative_align_weight() -> None:
    trajectory = Trajectory((turn(f=0.7), turn(f=0.7), turn(f=0.7), turn(f=0.7)))
    values = components(trajectory)
    assert values["align"] == -0.1
    assert values["total"] == pytest.approx(0.5 + 0.5 + 0.0 - 0.1)


def test_no_success_within_t_with_progress() -> None:
    trajectory = Trajectory((turn(f=0.3), turn(f=0.4), turn(f=0.5), turn(f=0.8, format_ok=False)))
    # final output breaks the format: fmt 0; keep .5; late 0; align .5 * .5 = .25
    assert components(trajectory) == pytest.approx({"fmt": 0.0, "exec": 0.5, "late": 0.0, "align": 0.25, "total": 0.75})


def test_never_executable() -> None:
    trajectory = Trajectory((turn(executable=False, f=0.1), turn(executable=False, f=0.1)))
    assert components(trajectory, formula="paper")["exec"] == 0.0
    # default: a broken first turn left broken pays the deterioration weight, as an executable one would
    assert components(trajectory)["exec"] == -0.5


def test_format_on_every_turn_option() -> None:
    trajectory = Trajectory((turn(format_ok=False), turn(match=True)))
    assert components(trajectory)["fmt"] == 0.5
    assert components(trajectory, format_every_turn=True)["fmt"] == 0.0


def test_turns_after_the_first_match_are_not_part_of_the_trajectory() -> None:
    trajectory = Trajectory((turn(match=True, f=0.4), turn(executable=False, f=1.0)))
    assert components(trajectory) == pytest.approx({"fmt": 0.5, "exec": 0.5, "late": 2.0, "align": -0.1, "total": 2.9})


def test_the_reward_records_its_config() -> None:
    result = progressive_reward(Trajectory((turn(),)))
    assert result.version == "progressive-v2"
    assert result.config_hash == ProgressiveConfig().config_hash
    assert ProgressiveConfig(gamma=0.9).config_hash != result.config_hash
    paper = progressive_reward(Trajectory((turn(),)), ProgressiveConfig(formula="paper"))
    assert paper.version == "progressive-paper-v1"
    assert paper.config_hash != result.config_hash
    assert ProgressiveConfig(disabled=frozenset({"exec"})).config_hash != result.config_hash


def test_upper_bound_falls_strictly_with_k_star() -> None:
    curve = [value for _, value in upper_bound_curve(4)]
    assert curve == pytest.approx([2.9, 2.5, 2.0, 1.75, 1.5])
    assert all(a > b for a, b in itertools.pairwise(curve))
    assert upper_bound(2) == pytest.approx(0.5 + 0.5 + 1.0 + 0.5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"omega_det": 0.1},
        {"omega_keep": 0.0},
        {"gamma": 0.0},
        {"gamma": 1.5},
        {"omega_acc": -1.0},
        {"omega_rec": 0.7},  # the guard needs recovery <= keep
        {"formula": "nope"},
    ],
)
def test_sign_rules_are_enforced(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        ProgressiveConfig(**kwargs)  # type: ignore[arg-type]


turns = st.builds(
    Turn,
    sql=st.one_of(st.none(), st.text(max_size=20)),
    format_ok=st.booleans(),
    executable=st.booleans(),
    match=st.booleans(),
    f=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 1)),
)


def test_the_paper_formula_allows_recovery_above_keep() -> None:
    values = components(Trajectory((turn(executable=False), turn(match=True))), omega_rec=0.7, formula="paper")
    assert values["exec"] == pytest.approx(0.7)


@given(st.lists(turns, min_size=0, max_size=6), st.sampled_from(["guarded", "paper"]))
def test_reward_is_finite_and_within_its_range(turn_list: list[Turn], formula: str) -> None:
    config = ProgressiveConfig(formula=formula)  # type: ignore[arg-type]
    result = progressive_reward(Trajectory(tuple(turn_list)), config)
    assert math.isfinite(result.total)
    low, high = reward_range(config)
    assert low - 1e-9 <= result.total <= high + 1e-9
    # a consistent trajectory never beats the k* = 1 upper bound
    assert result.total <= upper_bound(1) + 1e-9
    assert result.total == pytest.approx(sum(value for _, value in result.components))


def test_the_registry_says_which_weights_stamp_a_breakdown() -> None:
    from progress_sql.rewards.registry import RewardContext, get_reward

    spec = get_reward("progressive")
    weights = ProgressiveConfig(gamma=0.8)
    scored = spec.score(
        Trajectory((Turn("SELECT 1", True, True, True, 0.9),)), RewardContext("SELECT 1", progressive=weights)
    )
    assert spec.identity(RewardContext("SELECT 1", progressive=weights)) == (scored.version, scored.config_hash)
    assert spec.identity(RewardContext("SELECT 1")) != (scored.version, scored.config_hash)
