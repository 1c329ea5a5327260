"""The TRL rollout runs ambiguous episodes: the user's reply reaches the policy's context (compact
format: ``U: ...``) and the task terms reach the per-component reward functions."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import EXAMPLE_ID, ROWS_ATTRIBUTE, SampledTurn, TrlRollout, component_names
from progress_sql.prompts import CompactFormat
from tests.env.test_ambiguous import AMBIGUOUS, ASK, CONFIG, RIGHT, WRONG_GUESS


def test_the_trl_rollout_runs_ambiguous_episodes(tiny_tokenizer: Any, pool: ExecutionPool) -> None:
    fmt = CompactFormat()
    prompt = fmt.prompt(AMBIGUOUS.db_id, AMBIGUOUS.question)
    scripts = [[ASK, RIGHT], [WRONG_GUESS, RIGHT]]
    eos = tiny_tokenizer.eos_token_id

    class Scripted:
        """Rollout i's n-th turn is scripts[i][n], then eos (both episodes last two turns)."""

        def collective(self, trainer: Any) -> bool:
            return False

        def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]:
            turns = []
            for script, context in zip(scripts, contexts, strict=True):
                ids = tiny_tokenizer(script[context.count(eos)], add_special_tokens=False)["input_ids"]
                turns.append(SampledTurn((*ids, eos)))
            return turns

    rollout = TrlRollout([AMBIGUOUS], tiny_tokenizer, fmt, Scripted(), env_config=CONFIG, pool=pool)
    out = rollout([prompt, prompt], trainer=SimpleNamespace(**{ROWS_ATTRIBUTE: [{EXAMPLE_ID: 0}, {EXAMPLE_ID: 0}]}))
    asked, guessed = out["reward_components"]
    assert (asked["ask"], asked["guess"]) == (0.5, 0.0)
    assert guessed["guess"] == -1.5
    assert out["k_star"] == [1, 2]  # the reward's answers: the ask is not one
    assert {"ask", "guess", "checks"} <= set(component_names("progressive"))
    context = tiny_tokenizer.decode(out["completion_ids"][0])
    assert "U: " + AMBIGUOUS.ambiguity[0].interpretation in context
