"""Real GRPO and GSPO steps through TRL on CPU with a tiny model and the multi-turn rollout."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.tasks import load_task
from progress_sql.env import EnvConfig
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import (
    EXAMPLE_ID,
    ROWS_ATTRIBUTE,
    ModelGenerator,
    SampledTurn,
    TrlRollout,
    grpo_trainer,
    trainer_preset,
)
from progress_sql.prompts import CompactFormat

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
FORMAT = CompactFormat()


class HalfGoldGenerator:
    """Every other completion answers with the gold SQL, the rest are the tiny model's own samples, so
    that groups have reward variance (a random model alone never writes valid SQL)."""

    def __init__(self, tokenizer: Any, golds: dict[tuple[int, ...], str]) -> None:
        self.model = ModelGenerator(tokenizer, max_new_tokens=12)
        self.tokenizer = tokenizer
        self.golds = golds

    def collective(self, trainer: Any) -> bool:
        return False

    def __call__(self, contexts: Any, trainer: Any) -> list[SampledTurn]:
        sampled = self.model(contexts, trainer)
        out = []
        for position, (context, turn) in enumerate(zip(contexts, sampled, strict=True)):
            gold = next((g for p, g in self.golds.items() if tuple(context[: len(p)]) == p), None)
            if position % 2 == 1 and gold is not None:
                ids = self.tokenizer(FORMAT.answer(gold), add_special_tokens=False)["input_ids"]
                turn = SampledTurn((*ids, self.tokenizer.eos_token_id))
            out.append(turn)
        return out


class RecordingRollout:
    """Wraps the rollout function and keeps what it returned to TRL."""

    def __init__(self, rollout: TrlRollout) -> None:
        self.rollout = rollout
        self.outputs: list[dict[str, Any]] = []
        self.asked: list[tuple[str, Any]] = []  # (prompt, example its id named), every call

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        output = self.rollout(prompts, trainer)
        self.outputs.append(output)
        ids = [row[EXAMPLE_ID] for row in getattr(trainer, ROWS_ATTRIBUTE)]
        self.asked += [(p, self.rollout.examples[i]) for p, i in zip(prompts, ids, strict=True)]
        return output


def train_steps(
    preset: str,
    model: Any,
    tokenizer: Any,
    music_dir: Path,
    pool: ExecutionPool,
    out: Path,
    env_config: EnvConfig | None = None,
) -> tuple[list[dict[str, float]], RecordingRollout]:
    import torch

    torch.manual_seed(0)
    examples = load_task(str(music_dir / "questions.json"), music_dir)[:4]
    prompts = {FORMAT.prompt(e.db_id, e.question): e for e in examples}
    golds = {tuple(tokenizer(p, add_special_tokens=False)["input_ids"]): e.gold_sql for p, e in prompts.items()}
    settings = dict(trainer_preset(preset).settings)
    settings.update(num_generations=4, steps_per_generation=4)  # small groups; off-policy updates in both
    args = dict(
        output_dir=str(out), use_cpu=True, per_device_train_batch_size=4, max_steps=4, max_completion_length=96,
        learning_rate=5e-3, logging_steps=1, report_to="none", save_strategy="no", disable_tqdm=True,
        dataloader_num_workers=0, seed=0, **settings,
    )  # fmt: skip
    rollout = RecordingRollout(
        TrlRollout(list(prompts.values()), tokenizer, FORMAT, HalfGoldGenerator(tokenizer, golds),
                   env_config=env_config or EnvConfig(max_turns=2, timeout_s=2.0), pool=pool)
    )  # fmt: skip
    trainer = grpo_trainer(model, tokenizer, rollout, list(prompts), reward="progressive", args=args)
    from transformers.trainer_callback import PrinterCallback

    # logs go to metrics.jsonl and a progress bar, not printed dict by dict to the terminal
    assert not any(isinstance(callback, PrinterCallback) for callback in trainer.callback_handler.callbacks)
    trainer.train()
    return [entry for entry in trainer.state.log_history if "loss" in entry], rollout


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, music_dir: Path, tiny_tokenizer: Any) -> dict[str, Any]:
    from tests.tiny_lm import tiny_model

    results = {}
    with ExecutionPool(workers=1) as pool:
        for preset in ("grpo", "gspo"):
            model = tiny_model(tiny_tokenizer)
            results[preset] = train_steps(
                preset, model, tiny_tokenizer, music_dir, pool, tmp_path_factory.mktemp(preset)
            )
    return results


@pytest.mark.parametrize("preset", ["grpo", "gspo"])
def test_steps_run_and_every_reward_component_is_logged(runs: dict[str, Any], preset: str) -> None:
    logs, rollout = runs[preset]
    assert len(logs) == 4
    generation_steps = [entry for entry in logs if "reward" in entry]
    assert generation_steps  # rewards are logged on the steps that generated
    for entry in generation_steps:
        for component in ("fmt", "exec", "late", "align"):
            assert f"rewards/{component}/mean" in entry
        assert entry["frac_reward_zero_std"] < 1.0  # some groups carry a learning signal
    for output in rollout.outputs:
        assert all(1 <= turns <= 2 for turns in output["num_turns"])
        for completion, mask in zip(output["completion_ids"], output["env_mask"], strict=True):
            assert len(completion) == len(mask)
        # feedback tokens are masked: TRL counts only env_mask = 1 tokens as completion length
    first = rollout.outputs[0]
    model_tokens = [sum(mask) for mask in first["env_mask"]]
    assert logs[0]["completions/mean_length"] == pytest.approx(sum(model_tokens) / len(model_tokens))
    two_turn = [mask for mask, turns in zip(first["env_mask"], first["num_turns"], strict=True) if turns == 2]
    assert two_turn
    assert all(0 in mask for mask in two_turn)
    # the example_id column brought every prompt its own example
    assert rollout.asked
    assert all(prompt == FORMAT.prompt(e.db_id, e.question) for prompt, e in rollout.asked)


def test_gspo_importance_ratios_differ_from_grpo(runs: dict[str, Any]) -> None:
    grpo_logs, _ = runs["grpo"]
    gspo_logs, _ = runs["gspo"]
    grpo_clipped = [entry["clip_ratio/region_mean"] for entry in grpo_logs]
    gspo_clipped = [entry["clip_ratio/region_mean"] for entry in gspo_logs]
    # sequence-level ratios with GSPO's tight epsilon get clipped once updates are off-policy
    assert max(gspo_clipped) > 0
    assert gspo_clipped != grpo_clipped
