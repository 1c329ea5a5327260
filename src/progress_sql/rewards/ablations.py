"""The paper's reward ablations (Table 3) as named presets of :class:`ProgressiveConfig`.

Each arm changes a base configuration (the defaults unless given), so the same arm can be applied to
tuned weights. ``progress-sql ablate`` refers to arms by these names.

Labels follow the paper's wording: gamma = 1 is "w/o per-turn decay" (section 5's ablation study and
Appendix E.2, "removing the per-turn decay term by setting gamma = 1.0"); R_late itself stays on. The
arm was first named ``no-late``, which :data:`ALIASES` keeps as a former name. The paper's text names no
ablation that removes R_late (``disabled={"late"}`` remains available as a switch of
:class:`ProgressiveConfig`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from progress_sql.registry import lookup
from progress_sql.rewards.progressive import Component, ProgressiveConfig, RewardFormula


@dataclass(frozen=True, slots=True)
class RewardAblation:
    """One arm: components switched off, the decay removed (``gamma``) or the formula replaced.

    ``label`` is the arm's name in the paper's Table 3 (or ours where the paper has none).
    """

    name: str
    label: str
    description: str
    disable: frozenset[Component] = frozenset()
    gamma: float | None = None
    formula: RewardFormula | None = None

    def apply(self, base: ProgressiveConfig | None = None) -> ProgressiveConfig:
        """``base`` (default: :class:`ProgressiveConfig`) with this arm's changes; validated, so an arm
        that would leave the reward constant on this base raises ConfigError."""
        base = base or ProgressiveConfig()
        return replace(
            base,
            disabled=base.disabled | self.disable,
            gamma=base.gamma if self.gamma is None else self.gamma,
            formula=base.formula if self.formula is None else self.formula,
        )


ABLATIONS: Mapping[str, RewardAblation] = {
    arm.name: arm
    for arm in (
        RewardAblation("progressive", "full reward", "every component on (the default reward)"),
        RewardAblation("no-exec", "w/o R_exec", "execution-status transition term off", disable=frozenset({"exec"})),
        RewardAblation("no-decay", "w/o per-turn decay",
                       "gamma = 1: R_late no longer decays with k*, a late success pays as an early one", gamma=1.0),
        RewardAblation("no-align", "w/o R_align", "alignment-progress term off", disable=frozenset({"align"})),
        RewardAblation("no-format", "format off", "format term off", disable=frozenset({"fmt"})),
        RewardAblation("paper-formula", "paper formula", "section 4.2 as printed, without the first-turn guard",
                       formula="paper"),
    )
}  # fmt: skip
#: Former arm names -> current ones: commands and run folders that use them keep working.
ALIASES: Mapping[str, str] = {"no-late": "no-decay"}


def get_ablation(name: str) -> RewardAblation:
    """Look an arm up by name or former name (:data:`ALIASES`), with the known names in the error."""
    return lookup(ABLATIONS, name, "reward ablation", aliases=ALIASES)
