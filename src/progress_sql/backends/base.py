"""The backend interface: chat messages in, n sampled responses out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from progress_sql.errors import ConfigError
from progress_sql.prompts import Message


@dataclass(frozen=True, slots=True)
class GenerationConfig:
    """Sampling settings; ``temperature`` 0 means greedy decoding."""

    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 1024
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"GenerationConfig.n must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise ConfigError(f"GenerationConfig.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"GenerationConfig.top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ConfigError(f"GenerationConfig.max_tokens must be >= 1, got {self.max_tokens}")


class Backend(Protocol):
    """Generates ``config.n`` responses for each conversation, in input order; ``draws`` says how the
    samples were drawn (recorded in ``summary.json``)."""

    name: str

    @property
    def draws(self) -> str: ...

    def generate(self, conversations: Sequence[Sequence[Message]], config: GenerationConfig) -> list[list[str]]: ...


@runtime_checkable
class AnswerReporting(Protocol):
    """A backend that says as it goes how many conversations have all their answers, so that a long
    call's progress bar moves per answer (``eval`` sends 64 questions a call; a CPU model takes minutes)."""

    def generate_reporting(
        self, conversations: Sequence[Sequence[Message]], config: GenerationConfig, answered: Callable[[int], object]
    ) -> list[list[str]]:
        """:meth:`Backend.generate`, calling ``answered(k)`` as ``k`` more conversations are done."""
        ...
