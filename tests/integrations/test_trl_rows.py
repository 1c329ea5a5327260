"""The multi-turn rollout trained straight from ``progress-sql export --format trl`` rows, and golds
that fail or time out: scored 0 and marked, never raised out of ``GRPOTrainer``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from progress_sql.data import case_study
from progress_sql.env import EnvConfig
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import (
    EXAMPLE_ID,
    ROWS_ATTRIBUTE,
    ModelGenerator,
    SampledTurn,
    TrlRollout,
    component_names,
    grpo_trainer,
)
from progress_sql.prompts import ChatTemplateFormat, CompactFormat
from progress_sql.types import Example

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
FORMAT = CompactFormat()
FAILING_GOLD = "SELECT nope FROM nowhere"
#: Counts forever: only the time limit stops it.
#: Seconds per query: the endless gold runs this long once per test; a sound one needs far less.
LIMIT = 3.0
ENDLESS_GOLD = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


class Answers:
    """Every turn answers with the same SQL, then eos."""

    def __init__(self, tokenizer: Any, sql: str) -> None:
        self.ids = (*tokenizer(FORMAT.answer(sql), add_special_tokens=False)["input_ids"], tokenizer.eos_token_id)

    def collective(self, trainer: Any) -> bool:
        return False

    def __call__(self, contexts: Sequence[list[int]], trainer: Any) -> list[SampledTurn]:
        return [SampledTurn(self.ids) for _ in contexts]


def test_failing_and_endless_golds_score_zero_and_are_marked(
    tiny_tokenizer: Any, lenses_db: Path, pool: ExecutionPool
) -> None:
    examples = [
        Example(i, "names and average prices", "contact_lenses", str(lenses_db), gold)
        for i, gold in enumerate([case_study.GOLD_SQL, FAILING_GOLD, ENDLESS_GOLD])
    ]
    rollout = TrlRollout(
        examples, tiny_tokenizer, FORMAT, Answers(tiny_tokenizer, "SELECT 1"),
        env_config=EnvConfig(max_turns=3, timeout_s=LIMIT), pool=pool,
    )  # fmt: skip
    trainer = type("Trainer", (), {ROWS_ATTRIBUTE: [{EXAMPLE_ID: i} for i in range(3)]})()
    out = rollout([FORMAT.prompt("contact_lenses", f"question {i}") for i in range(3)], trainer)
    fine, failing, endless = out["gold_error"]
    assert fine == ""
    assert failing  # "no such table" (or, on a crowded machine, the time limit)
    assert "timeout" in endless
    zeros = dict.fromkeys(component_names("progressive"), 0.0)
    assert out["reward_components"][1:] == [zeros, zeros]
    assert out["reward_components"][0] != zeros  # the sound row is scored as usual
    assert out["num_turns"] == [3, 0, 0]
    # an unscored episode still has its one sampled turn (TRL needs a completion), and no feedback
    answer = list(Answers(tiny_tokenizer, "SELECT 1").ids)
    assert out["completion_ids"][1:] == [answer, answer]
    assert out["env_mask"][1:] == [[1] * len(answer)] * 2


class Recording:
    """Wraps the rollout function and keeps each call's rows and output."""

    def __init__(self, rollout: TrlRollout) -> None:
        self.rollout = rollout
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        output = self.rollout(prompts, trainer)
        self.calls.append((list(getattr(trainer, ROWS_ATTRIBUTE)), output))
        return output


def test_a_grpo_step_from_exported_rows(exported: Path, chat_tokenizer: Any, tmp_path: Path) -> None:
    """Rows as ``datasets`` loads the exported file, two of them with a gold that fails or never ends:
    the trainer steps, each prompt's episode is about its own row, the bad rows score 0 and are marked."""
    import torch
    import transformers
    from datasets import load_dataset

    tokenizer = chat_tokenizer
    rows = load_dataset("json", data_files=str(exported))["train"].select(range(3))
    broken = {1: FAILING_GOLD, 2: ENDLESS_GOLD}
    rows = rows.map(lambda row, i: {"gold_sql": broken.get(i, row["gold_sql"])}, with_indices=True)
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(
        transformers.Qwen2Config(
            vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192, tie_word_embeddings=True,
            pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        )
    )  # fmt: skip
    args = dict(
        output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=6, num_generations=2, max_steps=1,
        max_completion_length=64, report_to="none", save_strategy="no", disable_tqdm=True, dataloader_num_workers=0,
        seed=0, loss_type="grpo", beta=0.0,
    )  # fmt: skip
    with ExecutionPool(workers=1) as pool:
        rollout = Recording(
            TrlRollout((), tokenizer, ChatTemplateFormat(tokenizer), ModelGenerator(tokenizer, max_new_tokens=6),
                       env_config=EnvConfig(max_turns=2, timeout_s=LIMIT), pool=pool)
        )  # fmt: skip
        trainer = grpo_trainer(model, tokenizer, rollout, rows, reward="progressive", args=args)
        trainer.train()
    assert trainer.state.global_step == 1
    assert any("rewards/fmt/mean" in entry for entry in trainer.state.log_history)
    ((seen_rows, output),) = rollout.calls
    assert len(seen_rows) == 6
    trajectories = rollout.rollout.last_trajectories
    for row, error, components, trajectory in zip(
        seen_rows, output["gold_error"], output["reward_components"], trajectories, strict=True
    ):
        if row["gold_sql"] in broken.values():
            assert error
            assert set(components.values()) == {0.0}
            assert trajectory.turns == ()
        else:
            assert error == ""
            assert 1 <= len(trajectory.turns) <= 2
    assert sorted(bool(error) for error in output["gold_error"]) == [False] * 2 + [True] * 4
    # the prompt the model saw is the row's own conversation, rendered with the chat template
    first_prompt = tokenizer.decode(output["prompt_ids"][0])
    assert first_prompt.startswith("<|im_start|>system\n")
    assert seen_rows[0]["question"] in first_prompt
