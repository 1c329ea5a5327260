"""Rewards by name: each entry has a version and a declared range, checked by the tests.

>>> sorted(REWARDS)
['arctic', 'one-shot', 'progressive', 'progressive-paper', 'reasoning-sql', 'sql-r1']
>>> get_reward("progressive").value_range
(-0.6, 3.5)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from progress_sql.registry import lookup
from progress_sql.rewards import baselines
from progress_sql.rewards.baselines import RewardContext
from progress_sql.rewards.progressive import VERSIONS, ProgressiveConfig, progressive_reward, reward_range
from progress_sql.types import RewardBreakdown, Trajectory

RewardFn = Callable[[Trajectory, RewardContext], RewardBreakdown]


@dataclass(frozen=True, slots=True)
class RewardSpec:
    """A named reward: ``multi_turn`` rewards read the whole trajectory, the others its final turn."""

    name: str
    version: str
    value_range: tuple[float, float]
    multi_turn: bool
    fn: RewardFn
    description: str


def _progressive(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    return progressive_reward(trajectory, context.progressive)


def _progressive_paper(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    return progressive_reward(trajectory, replace(context.progressive, formula="paper"))


REWARDS: Mapping[str, RewardSpec] = {
    spec.name: spec
    for spec in (
        RewardSpec("progressive", VERSIONS["guarded"], reward_range(), True, _progressive,
                   "Progress-SQL: format + execution-status transition + decayed accuracy + alignment progress, "
                   "with no progress credit from a first turn that is not a formatted executable attempt"),
        RewardSpec("progressive-paper", VERSIONS["paper"], reward_range(ProgressiveConfig(formula="paper")), True,
                   _progressive_paper, "Progress-SQL exactly as section 4.2 prints it (no first-turn guard)"),
        RewardSpec("one-shot", "one-shot-v1", (0.0, 3.0), False, baselines.one_shot,
                   "the paper's single-turn baseline: 2.0 correct + 0.5 executable + 0.5 format"),
        RewardSpec("arctic", "arctic-v1", (0.0, 1.0), False, baselines.arctic,
                   "Arctic-Text2SQL-R1: 1 correct / 0.1 executable / 0"),
        RewardSpec("sql-r1", "sql-r1-v1", (-6.0, 7.5), False, baselines.sql_r1,
                   "SQL-R1: format +-1, execution +-2, result +-3, length bonus <= 1.5 on a match"),
        RewardSpec("reasoning-sql", "reasoning-sql-v1", (0.0, 2.0), False, baselines.reasoning_sql,
                   "Reasoning-SQL-style partial rewards: execution, schema linking, 2-grams, syntax, format"),
    )
}  # fmt: skip


def get_reward(name: str) -> RewardSpec:
    """Look a reward up by name, with the list of known names in the error."""
    return lookup(REWARDS, name, "reward")
