"""The TRL rollout function driven by a scripted policy over a real database: every per-turn field
against hand-computed values."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from progress_sql.data import case_study
from progress_sql.env import EnvConfig
from progress_sql.env.records import TurnRecord
from progress_sql.errors import ConfigError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import (
    EXAMPLE_ID,
    ROWS_ATTRIBUTE,
    SILENT_BATCHES_BEFORE_FAILING,
    SampledTurn,
    TrlRollout,
    component_names,
    component_reward_funcs,
)
from progress_sql.odt import diagnose, prepare_gold
from progress_sql.prompts import CompactFormat
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.types import Example

FORMAT = CompactFormat()
PROMPT = FORMAT.prompt("contact_lenses", "names and average prices")
INVALID = "SELECT nope FROM suppliers"


class ScriptedGenerator:
    """Answers the n-th turn of a prompt with the n-th scripted SQL, tokenized, plus eos."""

    def __init__(self, tokenizer: Any, scripts: dict[str, list[str]]) -> None:
        self.tokenizer = tokenizer
        self.scripts = {tuple(tokenizer(p, add_special_tokens=False)["input_ids"]): s for p, s in scripts.items()}

    def collective(self, trainer: Any) -> bool:
        return False

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]:
        out = []
        for context in contexts:
            prompt, script = next((p, s) for p, s in self.scripts.items() if tuple(context[: len(p)]) == p)
            turn = context[len(prompt) :].count(self.tokenizer.eos_token_id)
            ids = self.tokenizer(FORMAT.answer(script[turn]), add_special_tokens=False)["input_ids"]
            out.append(SampledTurn((*ids, self.tokenizer.eos_token_id)))
        return out


def kept_ids(*ids: int, **attributes: Any) -> Any:
    """A trainer stand-in holding the batch's rows (their example ids), as grpo_trainer's trainer does."""
    return SimpleNamespace(**{ROWS_ATTRIBUTE: [{EXAMPLE_ID: i} for i in ids]}, **attributes)


@pytest.fixture
def example(lenses_db: Path) -> Example:
    return Example(0, "names and average prices", "contact_lenses", str(lenses_db), case_study.GOLD_SQL)


def test_scripted_case_study_fields(tiny_tokenizer: Any, example: Example, pool: ExecutionPool) -> None:
    script = [*case_study.TURNS[:2], case_study.GOLD_SQL]
    rollout = TrlRollout(
        [example], tiny_tokenizer, FORMAT, ScriptedGenerator(tiny_tokenizer, {PROMPT: script}), pool=pool
    )
    out = rollout([PROMPT, PROMPT], trainer=kept_ids(0, 0))  # TRL repeats each prompt num_generations times
    assert len(out["completion_ids"]) == 2
    assert out["logprobs"] is None
    assert out["prompt_ids"][0] == tiny_tokenizer(PROMPT, add_special_tokens=False)["input_ids"]

    # the completion is answer, feedback, answer, feedback, answer; feedback tokens masked with 0
    eos = tiny_tokenizer.eos_token_id
    pieces: list[tuple[list[int], int]] = []
    gold = prepare_gold(case_study.GOLD_SQL)
    diagnoses = [diagnose(sql, gold) for sql in script]
    for turn, sql in enumerate(script):
        pieces.append(([*tiny_tokenizer(FORMAT.answer(sql), add_special_tokens=False)["input_ids"], eos], 1))
        if turn < 2:
            feedback = FORMAT.feedback(diagnoses[turn].feedback)
            pieces.append((tiny_tokenizer(feedback, add_special_tokens=False)["input_ids"], 0))
    assert out["completion_ids"][0] == [t for ids, _ in pieces for t in ids]
    assert out["env_mask"][0] == [m for ids, m in pieces for _ in ids]
    assert FORMAT.feedback(diagnoses[0].feedback) == (
        "\nF: SELECT_ERROR FROM_OR_JOIN_TABLE_MISMATCH JOIN_REDUNDANT JOIN_KEY_MISMATCH GROUP_BY_ERROR HAVING_ERROR\nA:"
    )

    assert out["num_turns"] == [3, 3]
    assert out["k_star"] == [3, 3]
    assert out["first_turn_match"] == [False, False]
    assert out["first_turn_f"][0] == pytest.approx(diagnoses[0].f)
    assert out["final_sql"][0] == case_study.GOLD_SQL
    # fmt 0.5 + keep 0.5 + late 2 * 0.5^2 + align 0.5 * (F3 - F1); the env has the schema, the check none:
    # every column is qualified, so the scores agree
    expected = {"fmt": 0.5, "exec": 0.5, "late": 0.5, "align": 0.5 * (diagnoses[2].f - diagnoses[0].f)}
    assert out["reward_components"][0] == pytest.approx(expected)
    funcs = component_reward_funcs("progressive")
    # then the task terms of write tasks and ambiguous questions (0 for a read question)
    assert [f.__name__ for f in funcs] == ["fmt", "exec", "late", "align", "ask", "guess", "checks"]
    per_component = [f([PROMPT] * 2, ["", ""], reward_components=out["reward_components"]) for f in funcs]
    assert sum(values[0] for values in per_component) == pytest.approx(sum(expected.values()))


def test_first_turn_match_stops_and_recovery_earns_its_term(
    tiny_tokenizer: Any, example: Example, pool: ExecutionPool
) -> None:
    recovering = FORMAT.prompt("contact_lenses", "recovering")
    direct = FORMAT.prompt("contact_lenses", "direct")
    scripts = {recovering: [INVALID, case_study.GOLD_SQL], direct: [case_study.GOLD_SQL]}
    config = EnvConfig(progressive=ProgressiveConfig(omega_rec=0.3))  # recovery differs from keep (<= keep: the guard)
    rollout = TrlRollout(
        [example, example], tiny_tokenizer, FORMAT, ScriptedGenerator(tiny_tokenizer, scripts),
        env_config=config, pool=pool,
    )  # fmt: skip
    out = rollout([recovering, direct], trainer=kept_ids(0, 1))
    assert out["num_turns"] == [2, 1]
    assert out["k_star"] == [2, 1]
    assert out["reward_components"][0]["exec"] == 0.3
    assert out["reward_components"][0]["late"] == 1.0
    assert out["reward_components"][1] == pytest.approx({"fmt": 0.5, "exec": 0.5, "late": 2.0, "align": -0.1})
    assert 0 not in out["env_mask"][1]  # a one-turn trajectory has no feedback tokens


def test_at_most_t_turns(tiny_tokenizer: Any, example: Example, pool: ExecutionPool) -> None:
    never = FORMAT.prompt("contact_lenses", "never")
    rollout = TrlRollout(
        [example], tiny_tokenizer, FORMAT, ScriptedGenerator(tiny_tokenizer, {never: [INVALID] * 9}),
        env_config=EnvConfig(max_turns=3), pool=pool,
    )  # fmt: skip
    out = rollout.episodes([never], [example], trainer=None)
    assert out["num_turns"] == [3]
    assert out["k_star"] == [0]
    assert out["env_mask"][0].count(0) > 0


def _answer_tokens(tokenizer: Any, sql: str) -> list[int]:
    return [*tokenizer(FORMAT.answer(sql), add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]


def test_the_completion_budget_stops_a_two_turn_trajectory(
    tiny_tokenizer: Any, example: Example, pool: ExecutionPool
) -> None:
    """``--max-completion-tokens`` bounds the whole completion: with room for the first answer and its
    feedback but no token more, the trajectory ends after turn 1, scored as a one-turn episode, and its
    record says why; without a budget the same script takes two turns and is solved at the second."""
    script = {PROMPT: [INVALID, case_study.GOLD_SQL]}
    first = _answer_tokens(tiny_tokenizer, INVALID)
    free = TrlRollout([example], tiny_tokenizer, FORMAT, ScriptedGenerator(tiny_tokenizer, script),
                      env_config=EnvConfig(max_turns=2), pool=pool)  # fmt: skip
    unbounded = free.episodes([PROMPT], [example], trainer=None)
    assert unbounded["k_star"] == [2]
    assert unbounded["budget_stopped"] == [False]
    mask = unbounded["env_mask"][0]
    feedback = mask.count(0)  # the environment's turn: the first answer ends in eos, so nothing closes it
    assert unbounded["completion_ids"][0][: len(first)] == first
    assert mask == [1] * len(first) + [0] * feedback + [1] * (len(mask) - len(first) - feedback)

    budget = len(first) + feedback  # the feedback fits, the second answer's first token does not
    bounded = TrlRollout([example], tiny_tokenizer, FORMAT, ScriptedGenerator(tiny_tokenizer, script),
                         env_config=EnvConfig(max_turns=2), pool=pool, completion_budget=budget)  # fmt: skip
    out = bounded.episodes([PROMPT], [example], trainer=None)
    assert out["completion_ids"][0] == first  # the feedback is not sent: no turn can follow it
    assert out["env_mask"][0] == [1] * len(first)
    assert out["num_turns"] == [1]
    assert out["k_star"] == [0]
    assert out["budget_stopped"] == [True]
    (record,) = bounded.last_records[0]
    assert record.feedback is None
    assert record.stopped is not None
    assert "completion budget" in record.stopped
    assert record.reward is not None
    assert out["reward_components"][0] == pytest.approx(dict(record.reward.components))
    assert TurnRecord.from_dict(record.to_dict()) == record
    # scored as a one-turn failure: nothing late, the alignment penalty (no correct turn)
    components = out["reward_components"][0]
    assert components["late"] == 0.0
    assert components["align"] == ProgressiveConfig().omega_align_neg

    budget = budget + len(first) // 2 + 1  # room for part of the second answer: it is cut there and judged
    cut = TrlRollout([example], tiny_tokenizer, FORMAT, ScriptedGenerator(tiny_tokenizer, script),
                     env_config=EnvConfig(max_turns=2), pool=pool, completion_budget=budget)  # fmt: skip
    out = cut.episodes([PROMPT], [example], trainer=None)
    assert len(out["completion_ids"][0]) == budget
    assert out["num_turns"] == [2]
    assert out["k_star"] == [0]
    assert out["budget_stopped"] == [True]
    assert "cut at" in (cut.last_records[0][-1].stopped or "")


def test_unknown_or_missing_example_ids_are_clear_errors(
    tiny_tokenizer: Any, example: Example, pool: ExecutionPool
) -> None:
    rollout = TrlRollout([example], tiny_tokenizer, FORMAT, ScriptedGenerator(tiny_tokenizer, {}), pool=pool)
    with pytest.raises(Exception, match="example_id 1 not in the training examples"):
        rollout(["something else"], trainer=kept_ids(1))
    with pytest.raises(Exception, match="passed no dataset row per prompt"):
        rollout(["something else"], trainer=None)  # a trainer that does not keep the ids
    assert rollout.env_config.schema_profile == "none"  # the opening messages are the dataset's


def test_component_names_of_peer_rewards() -> None:
    assert component_names("one-shot") == ("correct", "exec", "fmt", "ask", "guess", "checks")
    assert component_names("progressive") == ("fmt", "exec", "late", "align", "ask", "guess", "checks")


class SilentGenerator:
    """A model that stops at once: only eos."""

    def __init__(self, tokenizer: Any) -> None:
        self.eos = tokenizer.eos_token_id

    def collective(self, trainer: Any) -> bool:
        return False

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]:
        return [SampledTurn((self.eos,)) for _ in contexts]


def test_a_model_that_produces_no_tokens_fails_fast(tiny_tokenizer: Any, example: Example, pool: ExecutionPool) -> None:
    """One silent batch is data (a barely trained model may stop at once), with a warning; the same batch
    after batch is a misconfigured tokenizer and stops the run."""
    rollout = TrlRollout([example], tiny_tokenizer, FORMAT, SilentGenerator(tiny_tokenizer), pool=pool)
    for _ in range(SILENT_BATCHES_BEFORE_FAILING - 1):
        with pytest.warns(RuntimeWarning, match="produced no tokens"):
            scored = rollout([PROMPT, PROMPT], trainer=kept_ids(0, 0))
        assert len(scored["completion_ids"]) == 2
    with pytest.raises(ConfigError, match="produced no tokens for any prompt of this batch, 3 batches in a row"):
        rollout([PROMPT, PROMPT], trainer=kept_ids(0, 0))
