"""Held-out measurement of a run: EX before and after RL on the same prompts (their paired change:
:class:`progress_sql.evaluation.stats.PairedChange`).

Besides greedy single-turn EX (the paper's evaluation protocol), :func:`measure` runs the greedy
policy with ODT feedback for up to T turns (EX within T turns, the first-correct-turn
distribution) and tags each single-turn answer with the ODT (the paper's Table 8 structural
mismatch rates).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from progress_sql.env.core import EnvConfig
from progress_sql.evaluation.stats import Accuracy
from progress_sql.odt.config import OdtConfig
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class SetMeasurement:
    """One held-out set measured once: single-turn greedy EX, EX within T turns with feedback, the
    first-correct turn of each multi-turn episode (0: never), and the ODT structural mismatch rates
    of the single-turn answers."""

    single: Accuracy
    within_turns: Accuracy
    turns: int
    first_correct: Mapping[int, int]
    structural: Mapping[str, float | None]

    def as_json(self) -> dict[str, Any]:
        """Everything, per-prompt outcomes included (what :meth:`from_json` reads back)."""
        return {
            "single": list(self.single.matches),
            "within_turns": list(self.within_turns.matches),
            "turns": self.turns,
            "first_correct": {str(k): v for k, v in self.first_correct.items()},
            "structural": dict(self.structural),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SetMeasurement:
        return cls(
            single=Accuracy.of(data["single"]),
            within_turns=Accuracy.of(data["within_turns"]),
            turns=int(data["turns"]),
            first_correct={int(k): int(v) for k, v in data["first_correct"].items()},
            structural=dict(data["structural"]),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "single_turn": self.single.as_dict(),
            "within_turns": self.within_turns.as_dict() | {"turns": self.turns},
            "first_correct_turn": {str(k): v for k, v in sorted(self.first_correct.items())},
            "structural_mismatch": dict(self.structural),
        }


def measurement_env(run_env: EnvConfig | None, turns: int, **changes: Any) -> EnvConfig:
    """The environment of a held-out measurement: the run's own (``run_env``: its profile's ODT,
    feedback and reward; default: the default profile's) with the measurement's turn budget, a 10 s
    limit per query and no schema in the environment's prompt (the measurement builds its own
    prompts), and ``changes`` on top.

    >>> env = measurement_env(EnvConfig(max_turns=4), 2)
    >>> env.max_turns, env.timeout_s, env.schema_profile
    (2, 10.0, 'none')
    """
    return replace(run_env or EnvConfig(), max_turns=turns, timeout_s=10.0, schema_profile="none", **changes)


def structural_rates(
    examples: Sequence[Example], sqls: Sequence[str | None], odt: OdtConfig | None = None
) -> dict[str, float | None]:
    """The share of answers with a SELECT / JOIN / WHERE / GROUP mismatch against the gold, and
    their average (the paper's Table 8; :mod:`progress_sql.evaluation.analysis`), diagnosed with the
    run's ODT ``odt`` (its profile's; default: the default profile's)."""
    from progress_sql.evaluation.analysis import MAIN_CATEGORIES, analyze, diagnosis_tags
    from progress_sql.odt import prepare_gold

    odt = odt or OdtConfig()
    golds: dict[tuple[str, str], Any] = {}
    tags = []
    for example, sql in zip(examples, sqls, strict=True):
        key = (example.db_path, example.gold_sql)
        if key not in golds:
            golds[key] = prepare_gold(example.gold_sql, _schema(example.db_path), odt)
        tags.append(diagnosis_tags(sql, golds[key], odt))
    report = analyze(tags)
    rates: dict[str, float | None] = {c: report["rates"][c] for c in MAIN_CATEGORIES}
    rates["average"] = report["average"]
    return rates


def _schema(db_path: str) -> Any:
    from progress_sql.data.schema import read_schema

    return read_schema(db_path)


class _Unwrapped:
    """The part of a TRL trainer the rollout's model generator reads: the model itself."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.accelerator = self

    def unwrap_model(self, model: Any) -> Any:
        return model


def measure(
    model: Any,
    tokenizer: Any,
    fmt: Any,
    examples: Sequence[Example],
    *,
    turns: int,
    max_new_tokens: int = 48,
    batch_size: int = 64,
    env_config: EnvConfig | None = None,
) -> SetMeasurement:
    """Measure ``examples`` once (compact format, greedy decoding): see :class:`SetMeasurement`. The
    episodes run in the run's environment ``env_config`` (its profile's ODT, feedback and reward;
    default: the default profile's) within ``turns`` turns (:func:`measurement_env`)."""
    from progress_sql.execution.pool import ExecutionPool
    from progress_sql.integrations.trl import ModelGenerator, TrlRollout
    from progress_sql.sql.extract import extract
    from progress_sql.training.evaluate import execution_accuracy, greedy_sql

    texts = greedy_sql(model, tokenizer, fmt, examples)
    single = execution_accuracy(examples, texts)
    config = measurement_env(env_config, turns)
    structural = structural_rates(examples, [extract(text).sql for text in texts], config.odt)
    k_stars: list[int] = []
    with ExecutionPool(workers=1) as pool:
        for start in range(0, len(examples), batch_size):
            chunk = examples[start : start + batch_size]
            rollout = TrlRollout(
                list(chunk), tokenizer, fmt, ModelGenerator(tokenizer, max_new_tokens, temperature=0.0),
                env_config=config, pool=pool,
            )  # fmt: skip
            output = rollout.episodes([fmt.prompt(e.db_id, e.question) for e in chunk], chunk, _Unwrapped(model))
            k_stars += [int(k) for k in output["k_star"]]
    model.eval()
    return SetMeasurement(
        single=single,
        within_turns=Accuracy.of([k > 0 for k in k_stars]),
        turns=turns,
        first_correct=dict(Counter(k_stars)),
        structural=structural,
    )


__all__ = ["SetMeasurement", "measure", "structural_rates"]
