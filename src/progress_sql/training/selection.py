"""Which RL step's weights a run keeps: the last step's, or those of the step with the highest greedy
EX on the validation set (checked every few steps; step 0 is the warm start itself).

Why: on the embedded default RL raises EX on its own training prompts in every run, but its transfer
to held-out prompts rises and falls along the run (docs/benchmarks.md, "RL checkpoint selection"); the
validation set is drawn from the RL pool like the held-out sets and disjoint from both, so choosing on
it leaves the held-out sets untouched until they are scored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

#: ``last``: the weights of the last RL step; ``validation``: those of the best validation check.
RLSelect = Literal["last", "validation"]
RL_SELECT_RULES: tuple[RLSelect, ...] = ("last", "validation")


@dataclass(slots=True)
class BestOnValidation:
    """Checks ``score()`` (greedy validation EX of ``model`` as it is now) at step 0 and every
    ``every`` steps, and keeps a copy of the weights of the best check; a later check must be strictly
    better to replace it (so a tie keeps the earlier, less-moved weights). :meth:`restore` puts the
    kept weights back into ``model``."""

    model: Any
    score: Callable[[], float]
    every: int
    checks: list[dict[str, float]] = field(default_factory=list)
    best_step: int = -1
    best_ex: float = -1.0
    _kept: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"every must be >= 1, got {self.every}")

    def on_step(self, step: int) -> None:
        """The trainer's end-of-step hook: a check at every multiple of ``every``."""
        if step % self.every == 0:
            self.check(step)

    def check(self, step: int) -> None:
        """Score the weights of ``step`` (once per step) and keep them if they are the best so far."""
        if self.checks and self.checks[-1]["step"] == step:
            return
        ex = float(self.score())
        self.checks.append({"step": step, "validation_ex": round(ex, 4)})
        if ex > self.best_ex:
            self.best_step, self.best_ex = step, ex
            self._kept = {name: value.detach().clone() for name, value in self.model.state_dict().items()}

    def restore(self) -> bool:
        """Load the kept weights into the model; False (nothing loaded) when they are the last checked."""
        if self._kept is None or not self.checks or self.best_step == self.checks[-1]["step"]:
            return False
        self.model.load_state_dict(self._kept)
        return True

    def as_dict(self, rule: RLSelect) -> dict[str, Any]:
        """What the run's summary keeps: the rule, every check and the step whose weights were kept."""
        last = int(self.checks[-1]["step"]) if self.checks else None
        chosen = self.best_step if rule == "validation" else last
        return {"rule": rule, "every": self.every, "checks": list(self.checks), "chosen_step": chosen,
                "last_step": last}  # fmt: skip


__all__ = ["RL_SELECT_RULES", "BestOnValidation", "RLSelect"]
