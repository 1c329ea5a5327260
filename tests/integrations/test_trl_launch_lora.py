"""`train --lora`: one real GRPO step through TRL with PEFT LoRA adapters on the tiny model; only the
adapters train, and the saved model is the merged one (plus the adapter folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.tasks import load_task
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import TrlRollout, grpo_trainer
from progress_sql.training.rl import LoraSettings, RLSettings, save_final, trainer_args
from tests.integrations.test_trl_training import FORMAT, HalfGoldGenerator

pytest.importorskip("peft", reason="LoRA needs peft (the [trl] extra)")


def base_name(adapted: str) -> str:
    """The plain model's name of a weight of the PEFT-wrapped model."""
    return adapted.removeprefix("base_model.model.").replace(".base_layer.", ".")


def test_one_lora_step_trains_only_the_adapters(tmp_path: Path, music_dir: Path, tiny_tokenizer: Any) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from tests.tiny_lm import tiny_model

    torch.manual_seed(0)
    model = tiny_model(tiny_tokenizer)
    before = {name: value.detach().clone() for name, value in model.state_dict().items()}
    lora = LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj"))
    settings = RLSettings(
        steps=1, prompts_per_step=2, generations=4, learning_rate=5e-3, max_new_tokens=12, save_steps=1,
        save_total_limit=1, lora=lora,
    )  # fmt: skip
    examples = load_task(str(music_dir / "questions.json"), music_dir)[:2]
    prompts = {FORMAT.prompt(e.db_id, e.question): e for e in examples}
    golds = {tuple(tiny_tokenizer(p, add_special_tokens=False)["input_ids"]): e.gold_sql for p, e in prompts.items()}
    with ExecutionPool(workers=1) as pool:
        rollout = TrlRollout(
            list(prompts.values()), tiny_tokenizer, FORMAT, HalfGoldGenerator(tiny_tokenizer, golds),
            env_config=settings.env_config(), pool=pool,
        )  # fmt: skip
        trainer = grpo_trainer(
            model, tiny_tokenizer, rollout, list(prompts), reward=settings.reward,
            args=trainer_args(settings, tmp_path), lora=lora.peft_kwargs(),
        )  # fmt: skip
        trainer.train()
    assert trainer.state.global_step == 1
    adapted = trainer.accelerator.unwrap_model(trainer.model)
    trainable = {name for name, value in adapted.named_parameters() if value.requires_grad}
    assert trainable
    assert all("lora_" in name for name in trainable)
    assert {name.split(".")[-3] for name in trainable} == {"lora_A", "lora_B"}  # <module>.lora_A.default.weight
    assert any(".q_proj." in name for name in trainable)
    assert any(".v_proj." in name for name in trainable)
    weights = adapted.state_dict()
    base = {base_name(name): value for name, value in weights.items() if "lora_" not in name}
    assert set(base) == set(before)
    assert all(torch.equal(base[name], before[name]) for name in before)  # the base model is untouched
    lora_b = [value for name, value in weights.items() if "lora_B" in name]
    assert any(value.abs().sum() > 0 for value in lora_b)  # B starts at zero: the step moved the adapters

    final = tmp_path / "final"
    save_final(trainer, tiny_tokenizer, final, lora=True)
    assert (tmp_path / "final-adapter" / "adapter_config.json").is_file()
    merged = AutoModelForCausalLM.from_pretrained(final)
    merged_weights = merged.state_dict()
    changed = {name for name in before if not torch.equal(merged_weights[name], before[name])}
    assert changed
    assert all(".q_proj." in name or ".v_proj." in name for name in changed)


def test_run_rl_records_the_adapters_dtypes_before_merging_them(
    tmp_path: Path, music_dir: Path, tiny_tokenizer: Any
) -> None:
    """summary.json's trained dtypes of a LoRA run are the adapters' (read before save_final merges them
    away; read after, nothing was trainable and the record was empty)."""
    import torch

    from progress_sql.training.rl import run_rl
    from tests.tiny_lm import tiny_model

    torch.manual_seed(0)
    settings = RLSettings(
        steps=1, prompts_per_step=2, generations=2, learning_rate=5e-3, max_new_tokens=8, save_steps=1,
        save_total_limit=1, lora=LoraSettings(r=4, alpha=8, target_modules=("q_proj", "v_proj")),
    )  # fmt: skip
    examples = load_task(str(music_dir / "questions.json"), music_dir)[:2]
    prompts = [(FORMAT.prompt(e.db_id, e.question), e) for e in examples]
    with ExecutionPool(workers=1) as pool:
        result = run_rl(
            tiny_model(tiny_tokenizer), tiny_tokenizer, FORMAT, prompts, settings, tmp_path / "rl", pool,
            final=tmp_path / "final",
        )  # fmt: skip
    assert result.precision["trainable_parameter_dtypes"] == ["float32"]
    assert (tmp_path / "final-adapter" / "adapter_config.json").is_file()
