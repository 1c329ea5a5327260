"""Reward terms of the task kinds beyond reading (docs/environment.md#rewards-of-write-and-ambiguous-tasks):
added on top of the configured trajectory reward (progressive by default, unchanged), which scores
the SQL turns only (match = every check passed for a write task).

* ``ask``: ``ask_open`` for each labelled slot of an ambiguous question that a clarifying question
  addressed before the first answer, ``ask_needless`` for every other question (nothing open: an
  unambiguous question, a slot already answered, or a question about nothing labelled).
* ``guess``: ``guess_wrong`` once when an ambiguous question was answered before any slot was asked
  about and that first answer did not match.
* ``checks``: ``omega_checks`` times the share of checks the last answer of a write task passed
  (partial credit; the match itself is the progressive reward's accuracy term).

>>> facts = ClarifyFacts(ambiguous=True, asks=(), guessed=True, guess_matched=False)
>>> task_terms(facts, None, TaskTermsConfig())
(('ask', 0.0), ('guess', -1.0))
>>> asked = ClarifyFacts(ambiguous=True, asks=("order",), guessed=False, guess_matched=False)
>>> task_terms(asked, None, TaskTermsConfig())
(('ask', 0.5), ('guess', 0.0))
>>> needless = ClarifyFacts(ambiguous=False, asks=(None,), guessed=False, guess_matched=False)
>>> task_terms(needless, None, TaskTermsConfig())
(('ask', -0.25), ('guess', 0.0))
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from progress_sql.errors import ConfigError
from progress_sql.types import RewardBreakdown

#: The version stamped after a base reward's own when these terms are added.
TERMS_VERSION = "task-terms-v1"
#: The component names these terms add, in order.
TERM_COMPONENTS: tuple[str, ...] = ("ask", "guess", "checks")


@dataclass(frozen=True, slots=True)
class TaskTermsConfig:
    """Weights of the ambiguity and write terms, and whether the prompt offers the ask action.

    Defaults: asking about an open slot pays 0.5; a needless question costs 0.25; a wrong first
    guess on an ambiguous question costs 1.0, more than any question (the rule is checked); the
    checks' share pays up to 0.5. ``offer_ask`` adds the ``<ask>`` instruction to every opening
    prompt and makes the action accepted on every question (off: only on ambiguous questions, not
    advertised; elsewhere a response that asks is an answer without SQL:
    ``progress_sql.env.core.ask_offered``); ``user_seed`` picks the simulated user's phrasing."""

    offer_ask: bool = False
    ask_open: float = 0.5
    ask_needless: float = -0.25
    guess_wrong: float = -1.0
    omega_checks: float = 0.5
    user_seed: int = 0

    def __post_init__(self) -> None:
        if self.ask_open < 0:
            raise ConfigError(f"TaskTermsConfig.ask_open must be >= 0, got {self.ask_open}")
        if self.ask_needless > 0:
            raise ConfigError(f"TaskTermsConfig.ask_needless must be <= 0, got {self.ask_needless}")
        if not self.guess_wrong < min(0.0, self.ask_needless):
            raise ConfigError(
                "TaskTermsConfig.guess_wrong must cost more than a needless question "
                f"(< {min(0.0, self.ask_needless)}), got {self.guess_wrong}"
            )
        if self.omega_checks < 0:
            raise ConfigError(f"TaskTermsConfig.omega_checks must be >= 0, got {self.omega_checks}")

    def term_range(self, max_turns: int) -> tuple[float, float]:
        """The lowest and highest sum of the terms an episode of ``max_turns`` turns can get (a loose
        bound that holds for any episode): every turn a needless question but the last, a wrong guess;
        or every turn a question about an open slot but the last, an answer passing every check.

        >>> TaskTermsConfig().term_range(3)
        (-1.5, 1.5)
        """
        asks_low = min(max_turns * self.ask_needless, (max_turns - 1) * self.ask_needless + self.guess_wrong)
        asks_high = max(max_turns * self.ask_open, (max_turns - 1) * self.ask_open + self.omega_checks)
        return asks_low, asks_high

    @property
    def config_hash(self) -> str:
        weights = {k: v for k, v in asdict(self).items() if k not in ("offer_ask", "user_seed")}
        return hashlib.sha256(json.dumps(weights, sort_keys=True).encode()).hexdigest()[:12]


@dataclass(frozen=True, slots=True)
class ClarifyFacts:
    """What the ambiguity terms read of an episode: whether the question has slots, the slot each
    clarifying question addressed (None: none open), and whether the first answer came before any
    slot was asked about (``guessed``) and matched."""

    ambiguous: bool
    asks: tuple[str | None, ...]
    guessed: bool
    guess_matched: bool


def task_terms(
    clarify: ClarifyFacts | None, checks_share: float | None, config: TaskTermsConfig
) -> tuple[tuple[str, float], ...]:
    """The terms of one episode: ``ask`` and ``guess`` when ``clarify`` is given, ``checks`` for a
    write task (``checks_share`` not None)."""
    terms: list[tuple[str, float]] = []
    if clarify is not None:
        ask = sum(config.ask_open if slot is not None else config.ask_needless for slot in clarify.asks)
        wrong_guess = clarify.ambiguous and clarify.guessed and not clarify.guess_matched
        terms += [("ask", float(ask)), ("guess", config.guess_wrong if wrong_guess else 0.0)]
    if checks_share is not None:
        terms.append(("checks", config.omega_checks * checks_share))
    return tuple(terms)


def with_terms(base: RewardBreakdown, terms: Sequence[tuple[str, float]], config: TaskTermsConfig) -> RewardBreakdown:
    """``base`` with ``terms`` added (components and total); the identity names both."""
    if not terms:
        return base
    total = base.total + sum(value for _, value in terms)
    return RewardBreakdown(
        total,
        (*base.components, *terms),
        f"{base.version}+{TERMS_VERSION}",
        f"{base.config_hash}+{config.config_hash}",
    )


__all__ = ["TERMS_VERSION", "TERM_COMPONENTS", "ClarifyFacts", "TaskTermsConfig", "task_terms", "with_terms"]
