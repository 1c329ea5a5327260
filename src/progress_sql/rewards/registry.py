"""Rewards by name: each entry has a version and a declared range, checked by the tests.

``get_reward(name).score(trajectory, context)`` is the one way the environment and every trainer
adapter score a trajectory.

>>> sorted(REWARDS)
['arctic', 'one-shot', 'progressive', 'reasoning-sql', 'sql-r1']
>>> get_reward("progressive").value_range
(-0.6, 3.5)
>>> from progress_sql.types import Trajectory, Turn
>>> get_reward("arctic").score(Trajectory((Turn("SELECT 1", True, True, False, 0.5),)), RewardContext("SELECT 2")).total
0.1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from progress_sql.registry import lookup
from progress_sql.rewards import baselines
from progress_sql.rewards.context import RewardContext
from progress_sql.rewards.progressive import ProgressiveConfig, progressive_reward, reward_range
from progress_sql.types import RewardBreakdown, Trajectory

__all__ = ["REWARDS", "RewardContext", "RewardFn", "RewardSpec", "get_reward"]

RewardFn = Callable[[Trajectory, RewardContext], RewardBreakdown]


def _fixed(_context: RewardContext) -> str:
    return "fixed"


def _progressive_hash(context: RewardContext) -> str:
    return context.progressive.config_hash


@dataclass(frozen=True, slots=True)
class RewardSpec:
    """A named reward: ``multi_turn`` rewards read the whole trajectory, the others its final turn."""

    name: str
    version: str
    value_range: tuple[float, float]
    multi_turn: bool
    fn: RewardFn
    description: str
    #: The ``config_hash`` this reward stamps on its breakdowns under a context (weights it reads).
    config_hash: Callable[[RewardContext], str] = _fixed

    def score(self, trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
        """The reward of ``trajectory``."""
        return self.fn(trajectory, context)

    def identity(self, context: RewardContext) -> tuple[str, str]:
        """``(version, config_hash)`` of the breakdowns :meth:`score` returns under ``context``: a
        breakdown computed elsewhere with the same identity can be used as it is."""
        return self.version, self.config_hash(context)


def _progressive(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    return progressive_reward(trajectory, context.progressive)


REWARDS: Mapping[str, RewardSpec] = {
    spec.name: spec
    for spec in (
        RewardSpec("progressive", ProgressiveConfig.VERSION, reward_range(), True, _progressive,
                   "Progress-SQL: format + execution-status transition + decayed accuracy + alignment progress",
                   _progressive_hash),
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
