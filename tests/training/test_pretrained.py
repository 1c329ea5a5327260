"""The warm-started real-model run (training/pretrained.py) on a tiny model with a chat template: data and
the leakage guard, the held-out task on other databases, EX before the warm start, after it and after
RL (paired), the prompt style in every phase, resuming after the warm start, the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="training needs the [trl] extra")

from progress_sql.errors import ConfigError, DatasetError
from progress_sql.models import native_bf16
from progress_sql.studies.report import write_train_run
from progress_sql.training.pretrained import HeldOut, WarmStartSettings, run_real, train_top_layers
from progress_sql.training.recipe import TrainConfig
from tests.training.real_run import config_for, no_bar


def test_warm_started_run_measures_three_times_and_resumes(
    tmp_path: Path, music_dir: Path, tiny_chat_model: Path, heldout_dir: Path
) -> None:
    out = tmp_path / "run"
    config = config_for(out, tiny_chat_model, heldout_dir, trainable_layers=1)
    result = run_real(config, str(music_dir / "questions.json"), music_dir, no_bar)
    name = str(heldout_dir / "questions.json")
    assert set(result.base) == set(result.before) == set(result.after) == {name}
    assert result.base[name].n == result.before[name].n == result.after[name].n == 4
    assert len(result.base[name].matches) == 4  # per-question outcomes: the changes are paired
    assert result.sft["steps"] == 2
    assert result.rl["progressive"].steps == 1
    assert result.before_detail[name].turns == 2
    assert 0 < result.data_sizes["trainable_parameters"] < result.data_sizes["parameters"]
    assert result.precision["weight_dtypes"] == ["float32"]
    assert result.precision["rl"]["progressive"]["trainable_parameter_dtypes"] == ["float32"]
    # TRL's default (bf16 autocast, on a CPU too) where bf16 is native; fp32 on a CPU that would emulate it
    expected = "bf16 autocast" if native_bf16() else "fp32"
    assert result.precision["rl"]["progressive"]["compute"] == expected
    assert (out / "checkpoints" / "sft" / "base.json").is_file()
    outcomes = json.loads((out / "heldout.json").read_text())
    assert set(outcomes) == {"before_warm_start", "before_rl", "after_rl"}
    assert outcomes["after_rl"][name]["single"] == list(result.after[name].matches)
    assert (out / "rl" / "final" / "config.json").is_file()
    rollouts = [json.loads(line) for line in (out / "rl" / "rollouts.jsonl").read_text().splitlines()]
    assert rollouts, "RL wrote its trajectories"
    first_turn = rollouts[0]["turns"][0]
    # The small style's format check: a paper-style answer (with <think>) would not be format_ok.
    assert first_turn["format_problem"] in (None, "text or blocks outside the one <sql> block", "no SQL found",
                                            "empty response", "the <sql> block is empty")  # fmt: skip
    report = write_train_run(result, out).read_text()
    assert "## Held-out questions: before the warm start, after it, after RL" in report
    assert "Prompt style `small`" in report
    assert "weights loaded and trained as float32" in report
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["warm_start_change"]) == {name}
    assert set(summary["warm_start_and_rl_change"]) == {name}

    resumed = run_real(config, str(music_dir / "questions.json"), music_dir, no_bar)
    assert resumed.sft.get("resumed") is True
    assert resumed.base == result.base  # read back, not measured again


def test_training_on_the_held_out_databases_is_refused(
    tmp_path: Path, tiny_chat_model: Path, heldout_dir: Path
) -> None:
    config = config_for(tmp_path / "run", tiny_chat_model, heldout_dir)
    with pytest.raises(DatasetError, match="shares databases with the held-out set"):
        run_real(config, str(heldout_dir / "questions.json"), heldout_dir, no_bar)


def test_a_recipe_is_for_a_real_model_only(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="for a real model"):
        TrainConfig(out=tmp_path, warm_start=WarmStartSettings(), heldout=HeldOut())
    with pytest.raises(ConfigError, match="come together"):
        TrainConfig(out=tmp_path, model="some/model", warm_start=WarmStartSettings())


def test_train_top_layers_freezes_the_rest(tiny_chat_model: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_chat_model)
    total = sum(p.numel() for p in model.parameters())
    top = train_top_layers(model, 1)
    assert 0 < top < total
    assert all(p.requires_grad for p in model.get_decoder().layers[-1].parameters())
    assert not any(p.requires_grad for p in model.get_decoder().layers[0].parameters())
    assert not model.get_input_embeddings().weight.requires_grad
    assert train_top_layers(model, None) == total
    with pytest.raises(ConfigError, match=r"trainable_layers must be in 1\.\.2"):
        train_top_layers(model, 3)


def test_the_recipe_sets_everything_and_the_command_line_still_wins(
    tmp_path: Path, music_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    import progress_sql.training.pretrained as pretrained
    from progress_sql.cli import app

    seen: list[TrainConfig] = []

    def capture(config: TrainConfig, task: str, *_: object) -> None:
        seen.append(config)
        raise SystemExit(0)

    monkeypatch.setattr(pretrained, "run_real", capture)
    (music_dir / "train_spider.min.json").write_text((music_dir / "questions.json").read_text())
    base = ["train", "--recipe", "smollm2-cpu", "--data-dir", str(music_dir), "--out", str(tmp_path)]
    CliRunner().invoke(app, base)
    CliRunner().invoke(app, [*base, "--steps", "3", "--sft-steps", "5", "--heldout-size", "20", "--lr", "3e-5",
                             "--trainable-layers", "4", "--threads", "1"])  # fmt: skip
    recipe, changed = seen
    spec = pretrained.RECIPES["smollm2-cpu"]
    assert (recipe.model, recipe.prompt, recipe.threads, recipe.trainable_layers) == ("smollm2-135m", "small", 2, 10)
    assert recipe.questions == "train_spider.min.json"  # the reduced file, as the shared data ships it
    assert recipe.warm_start == spec.warm_start
    assert recipe.heldout == spec.heldout
    assert (recipe.rl.steps, recipe.rl.learning_rate, recipe.rl.turns, recipe.rl.generations) == (15, 1e-5, 2, 8)
    assert (changed.rl.steps, changed.rl.learning_rate, changed.rl.turns) == (3, 3e-5, 2)
    assert (changed.warm_start.steps, changed.heldout.size, changed.trainable_layers, changed.threads) == (5, 20, 4, 1)
    # ablate --recipe builds the same run (training.pretrained.recipe_config)
    assert pretrained.recipe_config(spec, out=tmp_path, data_dir=music_dir) == recipe


def test_heldout_size_needs_a_recipe(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from progress_sql.cli import app

    result = CliRunner().invoke(app, ["train", "--heldout-size", "5", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "use it with --recipe" in result.output
