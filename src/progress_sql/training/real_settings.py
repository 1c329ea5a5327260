"""The settings of a real-model run that :class:`progress_sql.training.recipe.TrainConfig` carries: its
supervised warm start and its held-out set (the run itself: :mod:`progress_sql.training.pretrained`)."""

from __future__ import annotations

from dataclasses import dataclass

from progress_sql.errors import ConfigError


@dataclass(frozen=True, slots=True)
class WarmStartSettings:
    """The supervised warm start of a real model: ``steps`` AdamW steps of ``batch_size`` sequences at
    ``learning_rate`` (warm-up, then a linear decay over the last quarter), on at most ``examples``
    training questions; ``two_turn_share`` of them show a wrong first answer, its ODT feedback and
    the gold (the multi-turn warm start of ``training/sft.py``). ``steps`` 0: no warm start."""

    steps: int = 150
    learning_rate: float = 3e-5
    batch_size: int = 8
    two_turn_share: float = 0.3
    examples: int | None = 2000
    warmup: int = 10
    #: Forward passes in bf16 autocast over the fp32 weights (``run_sft``'s ``bf16_autocast``): 1.78x
    #: faster a step on this CPU (docs/benchmarks.md).
    bf16_autocast: bool = False
    #: Recompute each trainable layer's activations in the backward pass (``run_sft``'s
    #: ``gradient_checkpointing``): the same gradients for a bounded memory (docs/benchmarks.md).
    gradient_checkpointing: bool = False

    def __post_init__(self) -> None:
        if self.steps < 0 or self.batch_size < 1 or not self.learning_rate > 0 or self.warmup < 0:
            raise ConfigError("the warm start needs steps >= 0, batch_size >= 1, learning_rate > 0 and warmup >= 0")
        if not 0.0 <= self.two_turn_share <= 1.0:
            raise ConfigError(f"two_turn_share must be in [0, 1], got {self.two_turn_share}")
        if self.examples is not None and self.examples < 1:
            raise ConfigError(f"examples must be >= 1, got {self.examples}")


@dataclass(frozen=True, slots=True)
class HeldOut:
    """Where a real-model run measures itself: ``size`` questions of ``task`` (a registered evaluation
    task under ``data_dir``, default the run's ``--data-dir``), drawn once with a fixed seed (the same
    questions for every seed, so runs pair across seeds too), only those whose database is present."""

    task: str = "spider-dev"
    size: int = 300
    data_dir: str | None = None
    #: Turn budget of the multi-turn measurement (EX within T turns with ODT feedback).
    turns: int = 2
    #: Greedy generation in bf16 autocast over the fp32 weights (faster on a CPU with bf16 instructions;
    #: greedy answers can differ from fp32's, so it is part of the base measurement's cache key).
    bf16_autocast: bool = False
    #: Turn budget of the base model's measurement before a warm start (None: ``turns``); a run without a
    #: warm start measures its base model with ``turns``, since that measurement is also its "before RL".
    base_turns: int | None = None

    def __post_init__(self) -> None:
        if self.size < 2 or self.turns < 1 or (self.base_turns is not None and self.base_turns < 1):
            raise ConfigError(
                f"the held-out set needs size >= 2 and turns >= 1, got size {self.size}, turns {self.turns}, "
                f"base_turns {self.base_turns}"
            )

    @property
    def base_budget(self) -> int:
        """The turn budget of the base model's measurement before a warm start."""
        return self.turns if self.base_turns is None else self.base_turns


__all__ = ["HeldOut", "WarmStartSettings"]
