"""Accuracy with its standard error, and paired changes between two measurements of the same
questions: what every EX figure of the package reports (``eval``, training's held-out sets, the
ablations, ``view``). Pure, no I/O, no imports from the rest of the package.

Every held-out prompt is scored twice (before and after), so a change in EX is a paired difference:
its standard error comes from the per-prompt differences (gained, lost), much smaller than the two
unpaired standard errors combined when most prompts do not change.

>>> before, after = Accuracy.of([True, True, False, False]), Accuracy.of([True, True, True, False])
>>> change = PairedChange.of(before, after)
>>> change.gained, change.lost, change.difference, round(change.se_difference, 3)
(1, 0, 0.25, 0.25)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field


def binomial_se(successes: int, n: int) -> float | None:
    """The standard error of a share ``successes / n`` (None without examples).

    >>> round(binomial_se(3, 972), 5)
    0.00178
    """
    if n == 0:
        return None
    share = successes / n
    return math.sqrt(share * (1 - share) / n)


@dataclass(frozen=True, slots=True)
class Accuracy:
    """EX over ``n`` prompts; ``matches`` keeps the per-prompt outcome (in the set's order) for pairing."""

    n: int
    correct: int
    matches: tuple[bool, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def of(cls, matches: Sequence[bool]) -> Accuracy:
        return cls(len(matches), sum(bool(m) for m in matches), tuple(bool(m) for m in matches))

    @property
    def ex(self) -> float:
        return self.correct / self.n if self.n else 0.0

    @property
    def standard_error(self) -> float:
        return binomial_se(self.correct, self.n) or 0.0

    def as_dict(self) -> dict[str, float]:
        return {"n": self.n, "correct": self.correct, "ex": round(self.ex, 6), "se": round(self.standard_error, 6)}


def pooled(parts: Sequence[Accuracy]) -> Accuracy:
    """Several sets as one (matches concatenated in order)."""
    matches = tuple(m for part in parts for m in part.matches)
    n, correct = sum(p.n for p in parts), sum(p.correct for p in parts)
    return Accuracy(n, correct, matches if len(matches) == n else ())


@dataclass(frozen=True, slots=True)
class PairedChange:
    """EX after minus EX before on the same ``n`` prompts. ``se_difference`` is the standard error of
    the mean per-prompt difference (sample standard deviation of d_i in {-1, 0, 1} over sqrt(n));
    ``significant`` says whether the change exceeds two of them."""

    n: int
    before: float
    after: float
    gained: int
    lost: int

    @classmethod
    def of(cls, before: Accuracy, after: Accuracy) -> PairedChange:
        if before.n != after.n or len(before.matches) != before.n or len(after.matches) != after.n:
            raise ValueError("a paired change needs the per-prompt outcomes of the same prompts before and after")
        gained = sum(1 for b, a in zip(before.matches, after.matches, strict=True) if a and not b)
        lost = sum(1 for b, a in zip(before.matches, after.matches, strict=True) if b and not a)
        return cls(before.n, before.ex, after.ex, gained, lost)

    @property
    def difference(self) -> float:
        return (self.gained - self.lost) / self.n if self.n else 0.0

    @property
    def se_difference(self) -> float:
        if self.n < 2:
            return 0.0
        mean = self.difference
        squares = (self.gained + self.lost) - self.n * mean * mean  # sum of (d_i - mean)^2
        return math.sqrt(max(0.0, squares) / (self.n - 1) / self.n)

    @property
    def significant(self) -> bool:
        return abs(self.difference) > 2 * self.se_difference

    def as_dict(self) -> dict[str, float | int | bool]:
        return {
            "n": self.n,
            "ex_before": round(self.before, 6),
            "ex_after": round(self.after, 6),
            "diff": round(self.difference, 6),
            "se_diff": round(self.se_difference, 6),
            "gained": self.gained,
            "lost": self.lost,
            "significant": self.significant,
        }


__all__ = ["Accuracy", "PairedChange", "binomial_se", "pooled"]
