"""The progressive reward of Progress-SQL (section 4.2): R(Y) = R_fmt + R_exec + R_late + R_align, in the
paper's formula or (default) with the first-turn guard; the formula and the guard:
docs/environment.md#rewards."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal, get_args

from progress_sql.errors import ConfigError
from progress_sql.types import RewardBreakdown, Trajectory, Turn

#: The reward's parts, in the order of every breakdown.
Component = Literal["fmt", "exec", "late", "align"]
COMPONENTS: tuple[Component, ...] = get_args(Component)

#: ``paper``: section 4.2 as printed; ``guarded``: the paper's formula with the first-turn guard.
RewardFormula = Literal["guarded", "paper"]
FORMULAS: tuple[RewardFormula, ...] = get_args(RewardFormula)

#: The version recorded with each reward; a formula's version changes whenever its values change.
VERSIONS: dict[RewardFormula, str] = {"guarded": "progressive-v2", "paper": "progressive-paper-v1"}

#: Which ``disabled`` entry switches each sign-checked weight's component off (named in the errors).
_WEIGHT_COMPONENT: dict[str, Component] = {
    "omega_keep": "exec",
    "omega_rec": "exec",
    "omega_det": "exec",
    "omega_acc": "late",
    "omega_align_pos": "align",
    "omega_align_neg": "align",
    "omega_fmt": "fmt",
}


@dataclass(frozen=True, slots=True)
class ProgressiveConfig:
    """Weights and switches of the progressive reward; defaults in docs/environment.md (gamma = 0.5 as
    in the paper).

    ``disabled`` switches components off by name (their breakdown entry reads 0.0), for the paper's
    ablations; weights keep the paper's sign rules, so zero is not the way to switch a term off.
    A configuration whose reward would be the same for every trajectory is refused."""

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
    formula: RewardFormula = "guarded"
    disabled: frozenset[Component] = frozenset()

    def __post_init__(self) -> None:
        # Accept any iterable of names (YAML and JSON give lists), stored as a frozenset.
        disabled: object = self.disabled
        if isinstance(disabled, str) or not isinstance(disabled, Iterable):
            raise ConfigError(f"ProgressiveConfig.disabled must be a set of component names, got {disabled!r}")
        names = frozenset(disabled)
        unknown = sorted(str(name) for name in names if name not in COMPONENTS)
        if unknown:
            raise ConfigError(
                f"ProgressiveConfig.disabled: unknown component {', '.join(unknown)}; "
                f"choose from {', '.join(COMPONENTS)}"
            )
        object.__setattr__(self, "disabled", names)
        if self.formula not in FORMULAS:
            raise ConfigError(f"ProgressiveConfig.formula must be one of {', '.join(FORMULAS)}, got {self.formula!r}")
        checks = {
            "omega_keep": (self.omega_keep > 0, "> 0"),
            "omega_rec": (self.omega_rec > 0, "> 0"),
            "omega_det": (self.omega_det < 0, "< 0"),
            "omega_acc": (self.omega_acc > 0, "> 0"),
            "omega_align_pos": (self.omega_align_pos > 0, "> 0"),
            "omega_align_neg": (self.omega_align_neg <= 0, "<= 0"),
            "omega_fmt": (self.omega_fmt >= 0, ">= 0"),
        }
        for name, (ok, rule) in checks.items():
            if not ok:
                raise ConfigError(
                    f"ProgressiveConfig.{name} = {getattr(self, name)} breaks the paper's sign rules ({name} {rule}); "
                    f"to switch R_{_WEIGHT_COMPONENT[name]} off, use disabled={{{_WEIGHT_COMPONENT[name]!r}}}"
                )
        if not 0 < self.gamma <= 1:
            raise ConfigError(
                f"ProgressiveConfig.gamma = {self.gamma} must be in (0, 1]; gamma = 1 removes the per-turn decay"
            )
        if self.formula == "guarded" and self.omega_rec > self.omega_keep:
            raise ConfigError(
                f"ProgressiveConfig.omega_rec = {self.omega_rec} > omega_keep = {self.omega_keep}: with the "
                "first-turn guard, recovery may not pay more than keeping executable SQL, or a broken first turn "
                "would pay; use formula='paper' (reward 'progressive-paper') for the paper's unguarded formula"
            )
        if self._constant():
            off = ", ".join(c for c in COMPONENTS if c in self.disabled)
            fmt_zero = f" and omega_fmt = {self.omega_fmt}" if "fmt" not in self.disabled else ""
            raise ConfigError(
                f"ProgressiveConfig: with {off} disabled{fmt_zero} the reward is the same for every trajectory; "
                "keep at least one component on"
            )

    def _constant(self) -> bool:
        """True when no enabled component can vary: exec, late and align always can (sign rules), fmt
        only with a non-zero weight."""
        varying = {c for c in COMPONENTS if c not in self.disabled}
        if self.omega_fmt == 0:
            varying.discard("fmt")
        return not varying

    @property
    def version(self) -> str:
        """The version of the formula these settings select (recorded with each reward)."""
        return VERSIONS[self.formula]

    def enabled(self, component: Component) -> bool:
        return component not in self.disabled

    @property
    def config_hash(self) -> str:
        """A short stable hash of the version and every weight and switch (recorded with each reward)."""
        settings = asdict(self)
        settings["disabled"] = sorted(self.disabled)
        payload = json.dumps({"version": self.version, **settings}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]


def is_attempt(turn: Turn) -> bool:
    """A turn the guard counts as an honest attempt: formatted, executable and with SQL."""
    return turn.format_ok and turn.executable and bool(turn.sql and turn.sql.strip())


def progressive_reward(trajectory: Trajectory, config: ProgressiveConfig | None = None) -> RewardBreakdown:
    """Score a trajectory; never raises on model output (an empty trajectory scores 0 in every part)."""
    config = config or ProgressiveConfig()
    k_star = trajectory.k_star
    # The rollout ends at the first match, so y_K is y_{k*}; turns after it are not part of Y.
    turns = trajectory.turns[:k_star] if k_star is not None else trajectory.turns
    if not turns:
        return RewardBreakdown(0.0, tuple((name, 0.0) for name in COMPONENTS), config.version, config.config_hash)
    first, last = turns[0], turns[-1]
    guarded_start = config.formula == "guarded" and not is_attempt(first)
    formatted = all(t.format_ok for t in turns) if config.format_every_turn else last.format_ok
    r_fmt = config.omega_fmt if formatted else 0.0
    if guarded_start:
        # No attempt at turn 1: repairing it pays omega_rec (<= omega_keep), leaving it broken deteriorates.
        r_exec = config.omega_rec if last.executable else config.omega_det
    elif first.executable and last.executable:
        r_exec = config.omega_keep
    elif last.executable:
        r_exec = config.omega_rec
    elif first.executable:
        r_exec = config.omega_det
    else:
        r_exec = 0.0
    r_late = config.omega_acc * config.gamma ** (k_star - 1) if k_star is not None else 0.0
    # The guard counts a non-attempt as F(y_1) = 1: no progress can be claimed from it.
    delta = 0.0 if guarded_start else _finite(last.f) - _finite(first.f)
    if delta > 0:
        r_align = config.omega_align_pos * delta
    elif k_star == 1 and config.no_align_penalty_on_first_turn_success:
        r_align = 0.0
    else:
        r_align = config.omega_align_neg
    values: dict[Component, float] = {"fmt": r_fmt, "exec": r_exec, "late": r_late, "align": r_align}
    parts = tuple((name, values[name] if config.enabled(name) else 0.0) for name in COMPONENTS)
    return RewardBreakdown(sum(v for _, v in parts), parts, config.version, config.config_hash)


def reward_range(config: ProgressiveConfig | None = None) -> tuple[float, float]:
    """Declared range of :func:`progressive_reward` (a loose bound that holds for any input): the sum
    of each enabled component's lowest and highest value.

    >>> reward_range()
    (-0.6, 3.5)
    >>> reward_range(ProgressiveConfig(disabled=frozenset({"exec"})))
    (-0.1, 3.0)
    """
    config = config or ProgressiveConfig()
    spans: dict[Component, tuple[float, float]] = {
        "fmt": (0.0, config.omega_fmt),
        "exec": (config.omega_det, max(config.omega_keep, config.omega_rec)),
        "late": (0.0, config.omega_acc),
        "align": (config.omega_align_neg, config.omega_align_pos),
    }
    enabled = [spans[c] for c in COMPONENTS if config.enabled(c)]
    return sum(low for low, _ in enabled), sum(high for _, high in enabled)


def _finite(value: float) -> float:
    """Clamp an alignment score into [0, 1]; NaN counts as 0."""
    return min(1.0, max(0.0, value)) if value == value else 0.0


def upper_bound(k_star: int | None, config: ProgressiveConfig | None = None) -> float:
    """The reward's upper bound when the first match is at turn ``k_star`` (None: never), with the
    format kept and the SQL executable at both ends (paper, Figure 2). Delta is at most 1, and 0 for a
    one-turn trajectory. The guard does not change it: the bound is reached from an honest attempt."""
    config = config or ProgressiveConfig()
    late = config.omega_acc * config.gamma ** (k_star - 1) if k_star is not None else 0.0
    if k_star == 1:
        align = 0.0 if config.no_align_penalty_on_first_turn_success else config.omega_align_neg
    else:
        align = config.omega_align_pos
    values: dict[Component, float] = {"fmt": config.omega_fmt, "exec": config.omega_keep, "late": late, "align": align}
    return sum(values[c] for c in COMPONENTS if config.enabled(c))


def upper_bound_curve(turns: int, config: ProgressiveConfig | None = None) -> list[tuple[str, float]]:
    """The bound for k* = 1 .. T and for no success, in that order. Without the decay (gamma = 1) it
    no longer falls: a late success can pay more than a first-turn one.

    >>> [round(v, 3) for _, v in upper_bound_curve(4)]
    [2.9, 2.5, 2.0, 1.75, 1.5]
    >>> [round(v, 3) for _, v in upper_bound_curve(3, ProgressiveConfig(gamma=1.0))]
    [2.9, 3.5, 3.5, 1.5]
    """
    points: list[tuple[str, float]] = [(str(k), upper_bound(k, config)) for k in range(1, turns + 1)]
    points.append(("none", upper_bound(None, config)))
    return points
