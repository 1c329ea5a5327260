"""An exported TRL file through TRL's own dataset handling: ``datasets.load_dataset("json")``, TRL's
conversational checks and chat templating, then one real GRPO step whose reward functions (a probe
and the package's :class:`ExportedRowReward`) receive the exported columns."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from progress_sql.env import EnvConfig
from progress_sql.integrations.trl import ExportedRowReward

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def test_rows_are_conversational_for_trl(exported: Path, chat_tokenizer: Any) -> None:
    from datasets import load_dataset
    from trl.data_utils import is_conversational, maybe_apply_chat_template

    dataset = load_dataset("json", data_files=str(exported))["train"]
    assert len(dataset) == 6
    assert {"prompt", "gold_sql", "db_id", "db_path", "question", "verified"} <= set(dataset.column_names)
    row = dataset[1]
    assert is_conversational(row)
    text = maybe_apply_chat_template({"prompt": row["prompt"]}, chat_tokenizer)["prompt"]
    assert text.startswith("<|im_start|>system\n")
    assert text.endswith("<|im_start|>assistant\n")
    assert row["question"] in text
    assert "singer" in text  # the compact schema is in the prompt


def test_one_grpo_step_reads_the_exported_columns(exported: Path, chat_tokenizer: Any, tmp_path: Path) -> None:
    import torch
    import transformers
    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(
        transformers.Qwen2Config(
            vocab_size=len(chat_tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192, tie_word_embeddings=True,
            pad_token_id=chat_tokenizer.pad_token_id, eos_token_id=chat_tokenizer.eos_token_id,
        )
    )  # fmt: skip
    seen: list[dict[str, Any]] = []

    def exported_columns(
        prompts: Any, completions: Any, gold_sql: list[str], db_path: list[str], **_: Any
    ) -> list[float]:
        seen.append({"prompts": prompts, "gold_sql": gold_sql, "db_path": db_path})
        return [float(len(sql) % 3) for sql in gold_sql]

    dataset = load_dataset("json", data_files=str(exported))["train"].select(range(2))
    args = GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=2, num_generations=2, max_steps=1,
        max_completion_length=4, report_to="none", save_strategy="no", disable_tqdm=True, dataloader_num_workers=0,
        seed=0,
    )  # fmt: skip
    row_reward = ExportedRowReward()
    trainer = GRPOTrainer(
        model=model, reward_funcs=[exported_columns, row_reward], args=args, train_dataset=dataset,
        processing_class=chat_tokenizer,
    )  # fmt: skip
    trainer.train()
    row_reward.close()
    assert trainer.state.global_step == 1
    logged = [entry for entry in trainer.state.log_history if "rewards/progressive/mean" in entry]
    assert logged  # the package's reward function scored the sampled completions
    golds = {row["gold_sql"] for row in dataset}
    assert seen
    assert set(seen[0]["gold_sql"]) <= golds
    assert all(Path(p).is_absolute() and Path(p).is_file() for p in seen[0]["db_path"])
    assert seen[0]["prompts"][0][0]["role"] == "system"  # conversational prompts reach the reward function


def answer(sql: str) -> list[dict[str, str]]:
    """A conversational completion, as TRL hands it to reward functions."""
    return [{"role": "assistant", "content": f"<think>look</think><sql>{sql}</sql>"}]


def test_the_exported_row_reward_scores_single_turn_answers(exported: Path) -> None:
    from datasets import load_dataset

    dataset = load_dataset("json", data_files=str(exported))["train"]
    rows = [dataset[i] for i in range(3)]
    columns = {key: [row[key] for row in rows] for key in dataset.column_names if key != "prompt"}
    completions = [
        answer(rows[0]["gold_sql"]),
        answer("SELECT name FROM nowhere"),
        [{"role": "assistant", "content": "?"}],
    ]
    reward = ExportedRowReward()
    try:
        values = reward([row["prompt"] for row in rows], completions, **columns, trainer_state=None)
    finally:
        reward.close()
    # a match at turn 1: fmt 0.5 + keep 0.5 + late 2.0 + align -0.1; under the first-turn guard a failing
    # query is no attempt and stays broken: fmt 0.5 + deteriorate -0.5 + align -0.1; no SQL at all: -0.5 - 0.1
    assert values == pytest.approx([2.9, -0.1, -0.6])
    assert reward.__name__ == "progressive"
    one_shot = ExportedRowReward(EnvConfig(reward="one-shot", max_turns=4))
    try:
        assert one_shot(
            [rows[0]["prompt"]], [answer(rows[0]["gold_sql"])], **{k: v[:1] for k, v in columns.items()}
        ) == [3.0]
    finally:
        one_shot.close()
    assert (one_shot.__name__, one_shot.config.max_turns) == ("one-shot", 1)
