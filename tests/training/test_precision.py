"""Real-model weights are the optimizer's master weights and stay fp32 (``models.load_causal_lm``): a
checkpoint saved in bf16, as released checkpoints are, loaded the way transformers loads it by default
(its saved dtype) cannot take a step at the paper's lr 1e-6; loaded through the project it can."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from progress_sql.models import checkpoint_dtype, load_causal_lm

torch = pytest.importorskip("torch", reason="training needs the [trl] extra")


@pytest.fixture(scope="module")
def bf16_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_lm import tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer(["SELECT count(*) FROM singer WHERE age > 30", "how many singers are there?"])
    folder = tmp_path_factory.mktemp("bf16")
    model = tiny_model(tokenizer)
    with torch.no_grad():  # weights of a trained model's scale (|w| ~ 0.02-0.1), not the init's
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.05)
    model.to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def changed_share(model: Any, lr: float = 1e-6) -> float:
    """Share of the weights one AdamW step at ``lr`` changes (Adam's first step moves each weight by
    about lr, whatever its gradient's size)."""
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    ids = torch.randint(0, model.config.vocab_size, (2, 16))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    changed = sum(int((p.detach() != b).sum()) for p, b in zip(model.parameters(), before, strict=True))
    return changed / sum(b.numel() for b in before)


def test_a_bf16_checkpoint_is_recorded_and_loaded_as_fp32(bf16_checkpoint: Path) -> None:
    assert checkpoint_dtype(str(bf16_checkpoint)) == "bfloat16"
    model = load_causal_lm(str(bf16_checkpoint))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert checkpoint_dtype(str(bf16_checkpoint / "absent")) is None


def test_one_step_at_lr_1e_6_moves_fp32_weights_and_not_bf16_ones(bf16_checkpoint: Path) -> None:
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    as_saved = AutoModelForCausalLM.from_pretrained(bf16_checkpoint)  # transformers 5: the saved dtype
    assert next(as_saved.parameters()).dtype == torch.bfloat16
    assert changed_share(as_saved) < 0.1  # the update rounds away: the bug of a bf16 model handed to TRL
    torch.manual_seed(0)
    assert changed_share(load_causal_lm(str(bf16_checkpoint))) > 0.9


def test_greedy_generation_in_bf16_autocast_keeps_fp32_weights(bf16_checkpoint: Path) -> None:
    from types import SimpleNamespace

    from progress_sql.backends.hf import load_tokenizer
    from progress_sql.integrations.trl import ModelGenerator

    model = load_causal_lm(str(bf16_checkpoint))
    tokenizer = load_tokenizer(str(bf16_checkpoint))
    trainer = SimpleNamespace(model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    contexts = [tokenizer("how many singers are there?").input_ids, tokenizer("SELECT count(*)").input_ids]
    for autocast in (False, True):
        turns = ModelGenerator(tokenizer, 5, temperature=0.0, bf16_autocast=autocast)(contexts, trainer)
        assert len(turns) == 2
        assert all(0 < len(turn.tokens) <= 5 for turn in turns)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


@pytest.mark.parametrize("native", [True, False])
def test_runs_autocast_to_bf16_only_where_bf16_is_native(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Emulated bf16 (a CPU without bf16 instructions) costs about 25x fp32's time: there TRL's RL default
    and the recipe's warm start and measurements compute in fp32; elsewhere nothing changes."""
    import progress_sql.models as models
    from progress_sql.training.pretrained import native_precision, recipe, recipe_config
    from progress_sql.training.rl import RLSettings, trainer_args

    monkeypatch.setattr(models, "native_bf16", lambda: native)
    args = trainer_args(RLSettings(), Path("out"))
    assert args.get("bf16") is (None if native else False)  # None: TRL's own default (bf16 autocast)
    assert trainer_args(RLSettings(compute_dtype="bf16"), Path("out"))["bf16"] is True  # asked for: kept
    assert "bf16" not in trainer_args(RLSettings(use_cpu=False), Path("out"))  # a GPU run: TRL's default
    config = recipe_config(recipe("smollm2-cpu"), out=Path("out"), data_dir=None)
    fitted = native_precision(config)
    assert (fitted is config) is native
    assert (fitted.warm_start.bf16_autocast, fitted.heldout.bf16_autocast) == (native, native)
    assert fitted.warm_start.steps == config.warm_start.steps
