"""The progressive reward of Progress-SQL (section 4.2): R(Y) = R_fmt + R_exec + R_late + R_align.

On a trajectory Y = (y_1, ..., y_K):

* R_align = omega_align+ * Delta if Delta > 0 else omega_align-, with Delta = F(y_K) - F(y_1);
* R_late = omega_acc * gamma^(k* - 1) for the first matching turn k*, else 0;
* R_exec = omega_keep / omega_rec / omega_det / 0 for executable-to-executable, recovery,
  deterioration and never-executable, judged on y_1 and y_K;
* R_fmt = omega_fmt if the final output follows the format (or every turn, with ``format_every_turn``).

>>> from progress_sql.types import Trajectory, Turn
>>> first_try = Trajectory((Turn("SELECT 1", True, True, True, 0.9),))
>>> progressive_reward(first_try).total   # 0.5 fmt + 0.5 keep + 2.0 late - 0.1 align (Delta = 0)
2.9
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import ClassVar

from progress_sql.errors import ConfigError
from progress_sql.types import RewardBreakdown, Trajectory

COMPONENTS = ("fmt", "exec", "late", "align")


@dataclass(frozen=True, slots=True)
class ProgressiveConfig:
    """Weights of the progressive reward; defaults in docs/environment.md (gamma = 0.5 as in the paper)."""

    VERSION: ClassVar[str] = "progressive-v1"

    omega_fmt: float = 0.5
    omega_keep: float = 0.5
    omega_rec: float = 0.5
    omega_det: float = -0.5
    omega_acc: float = 2.0
    gamma: float = 0.5
    omega_align_pos: float = 0.5
    omega_align_neg: float = -0.1
    format_every_turn: bool = False
    #: The paper's formula gives a one-turn success Delta = 0 and so omega_align-; this switch pays 0.
    no_align_penalty_on_first_turn_success: bool = False

    def __post_init__(self) -> None:
        checks = {
            "omega_keep": self.omega_keep > 0,
            "omega_rec": self.omega_rec > 0,
            "omega_det": self.omega_det < 0,
            "omega_acc": self.omega_acc > 0,
            "omega_align_pos": self.omega_align_pos > 0,
            "omega_align_neg": self.omega_align_neg <= 0,
            "omega_fmt": self.omega_fmt >= 0,
            "gamma": 0 < self.gamma <= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise ConfigError(f"ProgressiveConfig.{name} = {getattr(self, name)} breaks the paper's sign rules")

    @property
    def config_hash(self) -> str:
        """A short stable hash of the version and every weight (recorded with each reward)."""
        payload = json.dumps({"version": self.VERSION, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]


def progressive_reward(trajectory: Trajectory, config: ProgressiveConfig | None = None) -> RewardBreakdown:
    """Score a trajectory; never raises on model output (an empty trajectory scores 0 in every part)."""
    config = config or ProgressiveConfig()
    k_star = trajectory.k_star
    # The rollout ends at the first match, so y_K is y_{k*}; turns after it are not part of Y.
    turns = trajectory.turns[:k_star] if k_star is not None else trajectory.turns
    if not turns:
        return RewardBreakdown(0.0, tuple((name, 0.0) for name in COMPONENTS), config.VERSION, config.config_hash)
    first, last = turns[0], turns[-1]
    formatted = all(t.format_ok for t in turns) if config.format_every_turn else last.format_ok
    r_fmt = config.omega_fmt if formatted else 0.0
    if first.executable and last.executable:
        r_exec = config.omega_keep
    elif last.executable:
        r_exec = config.omega_rec
    elif first.executable:
        r_exec = config.omega_det
    else:
        r_exec = 0.0
    r_late = config.omega_acc * config.gamma ** (k_star - 1) if k_star is not None else 0.0
    delta = _finite(last.f) - _finite(first.f)
    if delta > 0:
        r_align = config.omega_align_pos * delta
    elif k_star == 1 and config.no_align_penalty_on_first_turn_success:
        r_align = 0.0
    else:
        r_align = config.omega_align_neg
    parts = (("fmt", r_fmt), ("exec", r_exec), ("late", r_late), ("align", r_align))
    return RewardBreakdown(sum(v for _, v in parts), parts, config.VERSION, config.config_hash)


def reward_range(config: ProgressiveConfig | None = None) -> tuple[float, float]:
    """Declared range of :func:`progressive_reward` (a loose bound that holds for any input).

    >>> reward_range()
    (-0.6, 3.5)
    """
    config = config or ProgressiveConfig()
    low = config.omega_det + config.omega_align_neg
    high = config.omega_fmt + max(config.omega_keep, config.omega_rec) + config.omega_acc + config.omega_align_pos
    return low, high


def _finite(value: float) -> float:
    """Clamp an alignment score into [0, 1]; NaN counts as 0."""
    return min(1.0, max(0.0, value)) if value == value else 0.0


def upper_bound(k_star: int | None, config: ProgressiveConfig | None = None) -> float:
    """The reward's upper bound when the first match is at turn ``k_star`` (None: never), with the
    format kept and the SQL executable at both ends (paper, Figure 2). Delta is at most 1, and 0 for a
    one-turn trajectory."""
    config = config or ProgressiveConfig()
    late = config.omega_acc * config.gamma ** (k_star - 1) if k_star is not None else 0.0
    if k_star == 1:
        align = 0.0 if config.no_align_penalty_on_first_turn_success else config.omega_align_neg
    else:
        align = config.omega_align_pos
    return config.omega_fmt + config.omega_keep + late + align


def upper_bound_curve(turns: int, config: ProgressiveConfig | None = None) -> list[tuple[str, float]]:
    """The bound for k* = 1 .. T and for no success, in that order.

    >>> [round(v, 3) for _, v in upper_bound_curve(4)]
    [2.9, 2.5, 2.0, 1.75, 1.5]
    """
    points: list[tuple[str, float]] = [(str(k), upper_bound(k, config)) for k in range(1, turns + 1)]
    points.append(("none", upper_bound(None, config)))
    return points
