"""Frozen records shared by every layer (DESIGN.md, "Layout")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Turn:
    """One policy turn of a refinement trajectory, as the reward sees it.

    ``executable`` is E(y): the SQL ran without a syntax or runtime error (a timeout is not
    executable); ``f`` is the alignment F = (F_struct + F_lex) / 2 against the gold; ``response`` is
    the raw model text (length-based rewards read it).
    """

    sql: str | None
    format_ok: bool
    executable: bool
    match: bool
    f: float
    response: str = ""


@dataclass(frozen=True, slots=True)
class Trajectory:
    """The turns y_1 .. y_K of one rollout (K <= T; the rollout stops at the first match)."""

    turns: tuple[Turn, ...]

    @property
    def k_star(self) -> int | None:
        """The first turn (1-based) whose result matches the gold, or None."""
        return next((index for index, turn in enumerate(self.turns, start=1) if turn.match), None)


@dataclass(frozen=True, slots=True)
class RewardBreakdown:
    """A trajectory reward with its components and the identity of the config that produced it."""

    total: float
    components: tuple[tuple[str, float], ...]
    reward: str
    config_hash: str

    def component(self, name: str) -> float:
        return dict(self.components)[name]
