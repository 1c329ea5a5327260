"""Reward ablations as configuration: components switched off by name, arms by name, constant rewards refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from progress_sql.errors import ConfigError
from progress_sql.rewards.ablations import ABLATIONS, ALIASES, get_ablation
from progress_sql.rewards.progressive import COMPONENTS, ProgressiveConfig, progressive_reward, reward_range
from progress_sql.types import Trajectory, Turn

# an honest start, success at turn 3, Delta = 0.4
TRAJECTORY = Trajectory(
    (
        Turn("SELECT 1", True, True, False, 0.5),
        Turn("SELECT 2", True, True, False, 0.6),
        Turn("SELECT 3", True, True, True, 0.9),
    )
)
FULL = {"fmt": 0.5, "exec": 0.5, "late": 0.5, "align": 0.2}


def parts(config: ProgressiveConfig) -> dict[str, float]:
    return dict(progressive_reward(TRAJECTORY, config).components)


def test_the_arms_by_name() -> None:
    assert sorted(ABLATIONS) == ["no-align", "no-decay", "no-exec", "no-format", "paper-formula", "progressive"]
    assert get_ablation("no-exec").apply().disabled == {"exec"}
    with pytest.raises(
        ConfigError,
        match=r"unknown reward ablation 'w/o exec'; choose one of no-align, no-decay, no-exec, no-format, "
        r"paper-formula, progressive \(or no-late, the former name of no-decay\)",
    ):
        get_ablation("w/o exec")


def test_labels_follow_the_papers_wording() -> None:
    # gamma = 1 is the paper's "w/o per-turn decay" (Appendix E.2), not the removal of R_late
    assert get_ablation("no-decay").label == "w/o per-turn decay"
    assert {arm.label for arm in ABLATIONS.values()} >= {"full reward", "w/o R_exec", "w/o R_align"}
    assert not any("R_late" in arm.label for arm in ABLATIONS.values())


def test_the_former_name_no_late_is_the_no_decay_arm() -> None:
    assert ALIASES == {"no-late": "no-decay"}
    assert get_ablation("no-late") is get_ablation("no-decay")
    assert get_ablation("no-late").apply() == get_ablation("no-decay").apply()
    assert "no-late" not in ABLATIONS  # an alias, not a second arm


def test_the_full_reward() -> None:
    assert parts(get_ablation("progressive").apply()) == pytest.approx(FULL)


@pytest.mark.parametrize(("arm", "component"), [("no-exec", "exec"), ("no-align", "align"), ("no-format", "fmt")])
def test_an_arm_zeroes_its_component_and_nothing_else(arm: str, component: str) -> None:
    config = get_ablation(arm).apply()
    values = parts(config)
    assert values == pytest.approx({**FULL, component: 0.0})
    assert [name for name, _ in progressive_reward(TRAJECTORY, config).components] == list(COMPONENTS)


def test_no_decay_removes_the_decay() -> None:
    config = get_ablation("no-decay").apply()
    assert config.gamma == 1.0
    assert parts(config) == pytest.approx({**FULL, "late": 2.0})
    for k in range(1, 5):  # a success pays the same at every turn
        trajectory = Trajectory(tuple(Turn("SELECT 1", True, True, i == k - 1, 0.5) for i in range(k)))
        assert progressive_reward(trajectory, config).component("late") == 2.0


def test_the_paper_formula_arm() -> None:
    config = get_ablation("paper-formula").apply()
    assert config.formula == "paper"
    assert progressive_reward(TRAJECTORY, config).version == "progressive-paper-v1"


def test_an_arm_applies_to_a_base_config_and_keeps_its_other_settings() -> None:
    base = ProgressiveConfig(omega_acc=3.0, disabled=frozenset({"fmt"}))
    config = get_ablation("no-exec").apply(base)
    assert config.omega_acc == 3.0
    assert config.disabled == frozenset({"fmt", "exec"})
    assert get_ablation("no-decay").apply(base).disabled == frozenset({"fmt"})


def test_every_arm_is_a_valid_distinct_config() -> None:
    hashes = {arm.apply().config_hash for arm in ABLATIONS.values()}
    assert len(hashes) == len(ABLATIONS)
    assert all(arm.label for arm in ABLATIONS.values())


def test_unknown_arm_lists_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown reward ablation 'w/o R_exec'; choose one of no-align, no-decay"):
        get_ablation("w/o R_exec")


def test_all_components_off_is_refused() -> None:
    with pytest.raises(ConfigError, match="the reward is the same for every trajectory"):
        ProgressiveConfig(disabled=frozenset(COMPONENTS))


def test_only_a_zero_weight_format_term_left_is_refused() -> None:
    refused = r"ProgressiveConfig: with exec, late, align disabled and omega_fmt = 0\.0 the reward is the same"
    with pytest.raises(ConfigError, match=refused):
        ProgressiveConfig(disabled=frozenset({"exec", "late", "align"}), omega_fmt=0.0)
    # with a format weight the reward still varies
    assert ProgressiveConfig(disabled=frozenset({"exec", "late", "align"})).disabled == {"exec", "late", "align"}


def test_an_arm_that_would_leave_the_reward_constant_fails_on_apply() -> None:
    base = ProgressiveConfig(disabled=frozenset({"fmt", "late", "align"}))
    with pytest.raises(ConfigError, match="same for every trajectory"):
        get_ablation("no-exec").apply(base)


def test_unknown_component_names_are_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown component decay; choose from fmt, exec, late, align"):
        ProgressiveConfig(disabled=frozenset({"decay"}))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be a set of component names"):
        ProgressiveConfig(disabled="exec")  # type: ignore[arg-type]


def test_a_list_from_yaml_is_stored_as_a_frozenset() -> None:
    config = ProgressiveConfig(disabled=["exec", "exec"])  # type: ignore[arg-type]
    assert config.disabled == frozenset({"exec"})
    assert hash(config) == hash(ProgressiveConfig(disabled=frozenset({"exec"})))


def test_a_zero_weight_points_to_the_switch() -> None:
    with pytest.raises(ConfigError, match=r"omega_keep > 0\); to switch R_exec off, use disabled=\{'exec'\}"):
        ProgressiveConfig(omega_keep=0.0)


def test_the_range_shrinks_with_the_components() -> None:
    assert reward_range() == pytest.approx((-0.6, 3.5))
    assert reward_range(get_ablation("no-align").apply()) == pytest.approx((-0.5, 3.0))
    assert reward_range(get_ablation("no-format").apply()) == pytest.approx((-0.6, 3.0))
    for arm in ABLATIONS.values():
        config = arm.apply()
        low, high = reward_range(config)
        assert low <= progressive_reward(TRAJECTORY, config).total <= high


turns = st.builds(
    Turn,
    sql=st.one_of(st.none(), st.text(max_size=10)),
    format_ok=st.booleans(),
    executable=st.booleans(),
    match=st.booleans(),
    f=st.floats(allow_nan=True, allow_infinity=True),
)


@given(st.lists(turns, max_size=5), st.sampled_from(sorted(ABLATIONS)))
def test_every_arm_stays_within_its_declared_range(turn_list: list[Turn], arm: str) -> None:
    config = get_ablation(arm).apply()
    result = progressive_reward(Trajectory(tuple(turn_list)), config)
    low, high = reward_range(config)
    assert low - 1e-9 <= result.total <= high + 1e-9
