"""The default reward's first-turn guard: a bad first turn never pays (issue 14, review finding 1)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progress_sql.registry import lookup
from progress_sql.rewards.ablations import ABLATIONS
from progress_sql.rewards.baselines import RewardContext
from progress_sql.rewards.progressive import ProgressiveConfig, is_attempt, progressive_reward
from progress_sql.rewards.registry import get_reward
from progress_sql.types import RewardBreakdown, Trajectory, Turn
from tests.rewards.bad_first_turn import measure

GARBAGE = ("unformatted", "empty", "non-executable")


def test_the_issue_figures_under_the_paper_formula() -> None:
    """Measured first: the paper's formula pays a garbage first turn (2.484 vs 2.247, 1.341 vs 1.103)."""
    values = measure(ProgressiveConfig(formula="paper"))
    assert values["honest", "reached"] == 2.247
    assert values["honest", "never"] == 1.103
    for garbage in GARBAGE:
        assert values[garbage, "reached"] == 2.484
        assert values[garbage, "never"] == 1.341


def test_the_default_guard_figures() -> None:
    values = measure()
    assert values["honest", "reached"] == 2.247  # an honest start scores as in the paper
    assert values["honest", "never"] == 1.103
    for garbage in GARBAGE:
        assert values[garbage, "reached"] == 1.9  # 0.5 fmt + 0.5 recovery + 1.0 late - 0.1 align
        assert values[garbage, "never"] == 0.9


def test_a_decoy_first_turn_still_pays_progress() -> None:
    """The route the guard leaves open (documented): a formatted, executable ``SELECT 1`` is an attempt,
    and R_align pays the rise of F from it. Both formulas agree on it."""
    for config in (ProgressiveConfig(), ProgressiveConfig(formula="paper")):
        values = measure(config)
        assert values["decoy", "reached"] == 2.458
        assert values["decoy", "never"] == 1.314


def test_the_registered_paper_reward_is_the_unguarded_formula() -> None:
    trajectory = Trajectory((Turn(None, False, False, False, 0.0), Turn("SELECT 1", True, True, True, 0.968)))
    context = RewardContext("SELECT 1")
    paper = get_reward("progressive-paper").fn(trajectory, context)
    assert paper.total == pytest.approx(2.484)
    assert paper.version == "progressive-paper-v1"
    default = get_reward("progressive").fn(trajectory, context)
    assert default.total == pytest.approx(1.9)
    assert default.version == "progressive-v2"


def test_what_counts_as_an_attempt() -> None:
    assert is_attempt(Turn("SELECT 1", True, True, False, 0.0))
    assert not is_attempt(Turn("SELECT 1", False, True, False, 0.0))  # unformatted
    assert not is_attempt(Turn("SELECT 1", True, False, False, 0.0))  # not executable
    assert not is_attempt(Turn("  ", True, True, False, 0.0))  # empty
    assert not is_attempt(Turn(None, True, True, False, 0.0))


# --- the property: replacing turn 1 by garbage never raises the reward ---------------------------------

alignment = st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0]), st.floats(allow_nan=True, allow_infinity=True))
sql_text = st.sampled_from(["SELECT 1", "SELECT name FROM singer", "SELEC x"])

later_turns = st.builds(
    Turn,
    sql=st.one_of(st.none(), st.just(""), sql_text),
    format_ok=st.booleans(),
    executable=st.booleans(),
    match=st.booleans(),
    f=alignment,
)

honest_first = st.builds(
    Turn, sql=sql_text, format_ok=st.just(True), executable=st.just(True), match=st.booleans(), f=alignment
)


@st.composite
def garbage_first(draw: st.DrawFn) -> Turn:
    """An unformatted, empty or non-executable first turn; every other field free."""
    kind = draw(st.sampled_from(GARBAGE))
    empty = st.one_of(st.none(), st.just(""), st.just("   "))
    sql = draw(empty if kind == "empty" else st.one_of(st.none(), sql_text))
    format_ok = False if kind == "unformatted" else draw(st.booleans())
    executable = False if kind == "non-executable" else draw(st.booleans())
    return Turn(sql, format_ok, executable, draw(st.booleans()), draw(alignment))


@st.composite
def configs(draw: st.DrawFn) -> ProgressiveConfig:
    """The default, every ablation arm of the default formula, and random weights within the sign rules."""
    arm = draw(st.sampled_from(sorted(name for name, a in ABLATIONS.items() if a.formula != "paper")))
    keep = draw(st.floats(0.01, 2))
    base = draw(
        st.one_of(
            st.just(ProgressiveConfig()),
            st.builds(
                ProgressiveConfig,
                omega_fmt=st.floats(0, 2),
                omega_keep=st.just(keep),
                omega_rec=st.floats(0.01, keep),
                omega_det=st.floats(-2, -0.01),
                omega_acc=st.floats(0.01, 4),
                gamma=st.floats(0.01, 1),
                omega_align_pos=st.floats(0.01, 2),
                omega_align_neg=st.floats(-2, 0),
                format_every_turn=st.booleans(),
                no_align_penalty_on_first_turn_success=st.booleans(),
            ),
        )
    )
    return lookup(ABLATIONS, arm, "arm").apply(base)


def rewards_of(
    garbage: Turn, honest: Turn, later: list[Turn], config: ProgressiveConfig
) -> tuple[RewardBreakdown, RewardBreakdown]:
    """The rewards of the same later turns after the garbage and after the honest first turn.

    A garbage turn is never more correct than the honest attempt it replaces (a non-executable or
    empty answer cannot match; an unformatted one can, and then both end at turn 1).
    """
    if garbage.match and not honest.match:
        garbage = Turn(garbage.sql, garbage.format_ok, garbage.executable, False, garbage.f)
    return (
        progressive_reward(Trajectory((garbage, *later)), config),
        progressive_reward(Trajectory((honest, *later)), config),
    )


@settings(max_examples=1500, deadline=None)
@given(garbage_first(), honest_first, st.lists(later_turns, max_size=4), configs())
def test_a_garbage_first_turn_never_beats_an_honest_attempt(
    garbage: Turn, honest: Turn, later: list[Turn], config: ProgressiveConfig
) -> None:
    with_garbage, with_honest = rewards_of(garbage, honest, later, config)
    assert with_garbage.total <= with_honest.total + 1e-9
    # and component by component, so no ablation arm reopens the route
    for (name, bad), (_, good) in zip(with_garbage.components, with_honest.components, strict=True):
        assert bad <= good + 1e-9, name


@settings(max_examples=300, deadline=None)
@given(garbage_first(), honest_first, st.lists(later_turns, min_size=1, max_size=4))
def test_under_the_paper_formula_garbage_pays_only_through_align_and_exec(
    garbage: Turn, honest: Turn, later: list[Turn]
) -> None:
    """The same comparison under the paper's formula: where garbage wins, R_align or R_exec (the two
    terms the guard changes) made it win."""
    with_garbage, with_honest = rewards_of(garbage, honest, later, ProgressiveConfig(formula="paper"))
    if with_garbage.total > with_honest.total + 1e-9:
        pairs = zip(with_garbage.components, with_honest.components, strict=True)
        raised = {name for (name, bad), (_, good) in pairs if bad > good}
        assert raised <= {"align", "exec"}


def test_the_paper_formula_fails_the_property_on_a_concrete_case() -> None:
    later = [Turn("SELECT 1", True, True, True, 0.9)]
    garbage = Turn(None, False, False, False, 0.0)
    honest = Turn("SELECT 2", True, True, False, 0.5)
    paper = ProgressiveConfig(formula="paper")
    assert (
        progressive_reward(Trajectory((garbage, *later)), paper).total
        > progressive_reward(Trajectory((honest, *later)), paper).total
    )


@settings(max_examples=500, deadline=None)
@given(honest_first, st.lists(later_turns, max_size=4), configs())
def test_an_honest_start_scores_as_the_paper_formula(
    honest: Turn, later: list[Turn], config: ProgressiveConfig
) -> None:
    """The guard only acts on a first turn that is no attempt, so the paper's properties (earlier
    success pays more, a rise of F pays, the Figure 2 bounds) hold for honest starts unchanged."""
    trajectory = Trajectory((honest, *later))
    guarded = progressive_reward(trajectory, config)
    paper = progressive_reward(trajectory, replace(config, formula="paper"))
    assert guarded.components == paper.components
    assert guarded.version != paper.version
