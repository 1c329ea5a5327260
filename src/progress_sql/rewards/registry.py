"""Rewards by name: each entry has a version and a declared range, checked by the tests.

``get_reward(name).score(trajectory, context)`` is the one way the environment and every trainer
adapter score a trajectory.

>>> sorted(REWARDS)
['arctic', 'one-shot', 'progressive', 'progressive-paper', 'reasoning-sql', 'skyrl-sql', 'sql-r1']
>>> get_reward("progressive").value_range
(-0.6, 3.5)
>>> from progress_sql.types import Trajectory, Turn
>>> get_reward("arctic").score(Trajectory((Turn("SELECT 1", True, True, False, 0.5),)), RewardContext("SELECT 2")).total
0.1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from progress_sql.registry import lookup
from progress_sql.rewards import baselines
from progress_sql.rewards.context import RewardContext
from progress_sql.rewards.progressive import VERSIONS, ProgressiveConfig, progressive_reward, reward_range
from progress_sql.types import RewardBreakdown, Trajectory

__all__ = ["REWARDS", "RewardContext", "RewardFn", "RewardSpec", "get_reward"]

RewardFn = Callable[[Trajectory, RewardContext], RewardBreakdown]


def _paper(context: RewardContext) -> ProgressiveConfig:
    """The context's weights under the paper's formula (reward ``progressive-paper``)."""
    return replace(context.progressive, formula="paper")


@dataclass(frozen=True, slots=True)
class RewardSpec:
    """A named reward: ``multi_turn`` rewards read the whole trajectory, the others its final turn."""

    name: str
    version: str
    value_range: tuple[float, float]
    multi_turn: bool
    fn: RewardFn
    description: str
    #: The ``(version, config_hash)`` this reward stamps on its breakdowns under a context, for rewards
    #: that read weights from it; None: ``(version, "fixed")``.
    stamp: Callable[[RewardContext], tuple[str, str]] | None = None

    def score(self, trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
        """The reward of ``trajectory``."""
        return self.fn(trajectory, context)

    def identity(self, context: RewardContext) -> tuple[str, str]:
        """``(version, config_hash)`` of the breakdowns :meth:`score` returns under ``context``: a
        breakdown computed elsewhere with the same identity can be used as it is."""
        return self.stamp(context) if self.stamp is not None else (self.version, "fixed")


def _progressive(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    return progressive_reward(trajectory, context.progressive)


def _progressive_paper(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    return progressive_reward(trajectory, _paper(context))


REWARDS: Mapping[str, RewardSpec] = {
    spec.name: spec
    for spec in (
        RewardSpec("progressive", VERSIONS["guarded"], reward_range(), True, _progressive,
                   "Progress-SQL: format + execution-status transition + decayed accuracy + alignment progress, "
                   "with no progress credit from a first turn that is not a formatted executable attempt",
                   lambda c: (c.progressive.version, c.progressive.config_hash)),
        RewardSpec("progressive-paper", VERSIONS["paper"], reward_range(ProgressiveConfig(formula="paper")), True,
                   _progressive_paper, "Progress-SQL exactly as section 4.2 prints it (no first-turn guard)",
                   lambda c: (_paper(c).version, _paper(c).config_hash)),
        RewardSpec("one-shot", "one-shot-v1", (0.0, 3.0), False, baselines.one_shot,
                   "the paper's single-turn baseline: 2.0 correct + 0.5 executable + 0.5 format"),
        RewardSpec("arctic", "arctic-v1", (0.0, 1.0), False, baselines.arctic,
                   "Arctic-Text2SQL-R1: 1 correct / 0.1 executable / 0"),
        RewardSpec("sql-r1", "sql-r1-v1", (-6.0, 7.5), False, baselines.sql_r1,
                   "SQL-R1: format +-1, execution +-2, result +-3, length bonus <= 1.5 on a match"),
        RewardSpec("skyrl-sql", "skyrl-sql-v1", (-1.0, 1.0), False, baselines.skyrl_sql,
                   "SkyRL-SQL: -1 format broken (its rule over the episode under the skyrl protocol) / 1 correct / 0"),
        RewardSpec("reasoning-sql", "reasoning-sql-v1", (0.0, 2.0), False, baselines.reasoning_sql,
                   "Reasoning-SQL-style partial rewards: execution, schema linking, 2-grams, syntax, format"),
    )
}  # fmt: skip


def get_reward(name: str) -> RewardSpec:
    """Look a reward up by name, with the list of known names in the error."""
    return lookup(REWARDS, name, "reward")
