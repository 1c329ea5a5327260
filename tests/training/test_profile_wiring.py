"""The ``paper`` profile chosen once, read by every entry point (issue 32, "Done when"): the verl
recipe (its overrides, and the environment and reward its agent loop and ``compute_score`` build from
them), the SkyRL recipe (the environment ``integrations/skyrl.py`` builds from its command line) and
``train --model`` on a real model folder run the same reward, ODT, T, gamma, G, temperature, lr and
KL term; ``ablate --model <folder> --profile paper`` runs its arms under it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from typer.testing import CliRunner

pytest.importorskip("trl", reason="training needs the [trl] extra")

from progress_sql.cli import app
from progress_sql.env.core import EnvConfig
from progress_sql.env.settings import ENV_FIELDS
from progress_sql.integrations.skyrl import entry_settings, settings
from progress_sql.integrations.verl.reward import reward_settings
from progress_sql.integrations.verl.settings import loop_env_config, loop_profile
from progress_sql.profiles import PROFILES
from progress_sql.training import pretrained
from progress_sql.training.real_settings import HeldOut, WarmStartSettings
from tests.integrations.test_trainer_setting import RECIPES, dry_run
from tests.integrations.trainer_values import skyrl_values, verl_values
from tests.training.test_train_command import parsed_config

runner = CliRunner()


def _values(env: EnvConfig, trainer: dict[str, Any]) -> dict[str, Any]:
    """What the issue asks to agree: the reward, the ODT, T, gamma, G, tau, lr and the KL coefficient."""
    return {"reward": env.reward, "odt": env.odt, "turns": env.max_turns, "gamma": env.progressive.gamma,
            "samples_per_prompt": trainer["samples_per_prompt"], "temperature": trainer["temperature"],
            "learning_rate": trainer["learning_rate"], "kl_coef": trainer["kl_coef"]}  # fmt: skip


def verl_composed(profile: str) -> dict[str, Any]:
    """recipes/verl/grpo.sh under PROFILE: its overrides, and the loop's and the reward's settings from them."""
    overrides = dry_run(RECIPES / "verl" / "grpo.sh", PROFILE=profile, TRAIN_FILES="/t.parquet", VAL_FILES="/v.parquet")
    cfg = OmegaConf.from_dotlist([override.removeprefix("+") for override in overrides])
    [entry] = OmegaConf.load(cfg.actor_rollout_ref.rollout.agent.agent_loop_config_path)
    loop = OmegaConf.to_container(entry)
    assert isinstance(loop, dict)
    env = loop_env_config({k: v for k, v in loop.items() if k in ENV_FIELDS}, loop_profile(loop.get("profile"), cfg))
    reward, weights, reward_profile = reward_settings(
        OmegaConf.to_container(cfg.reward.custom_reward_function.reward_kwargs)
    )  # type: ignore[arg-type]
    # compute_score scores what the loop scored: the same reward, weights and profile
    assert (reward, weights, reward_profile) == (env.reward, env.progressive, profile)
    trainer = verl_values(cfg)
    assert trainer["turns"] == env.max_turns
    return _values(env, trainer)


def skyrl_composed(profile: str) -> dict[str, Any]:
    """recipes/skyrl/train.sh under PROFILE: the environment as the entry point and the environment build it."""
    command = dry_run(RECIPES / "skyrl" / "train.sh", PROFILE=profile)
    cfg = OmegaConf.from_cli(command[3:])
    section = OmegaConf.to_container(cfg.environment.skyrl_gym.progress_sql)
    assert isinstance(section, dict)
    merged = entry_settings(section, int(cfg.environment.skyrl_gym.max_env_workers))
    env = settings(merged, {"max_turns": cfg.generator.max_turns}).config
    return _values(env, skyrl_values(cfg))


def train_composed(profile: str, model: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``train --model FOLDER --profile PROFILE``: the configuration the command hands to the run."""
    config = parsed_config(monkeypatch, ["--out", str(out), "--model", str(model), "--task", "questions.json",
                                         "--profile", profile], "run_pretrained")  # fmt: skip
    rl = config.rl
    trainer = {"samples_per_prompt": rl.generations, "temperature": rl.temperature,
               "learning_rate": rl.learning_rate, "kl_coef": rl.kl_coef}  # fmt: skip
    return _values(rl.env_config(), trainer)


def test_verl_skyrl_and_train_run_the_same_paper_profile(
    tiny_chat_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    composed = {
        "verl": verl_composed("paper"),
        "skyrl": skyrl_composed("paper"),
        "train": train_composed("paper", tiny_chat_model, tmp_path / "paper", monkeypatch),
    }
    paper = PROFILES["paper"]
    expected = {"reward": "progressive-paper", "odt": paper.odt_config(), "turns": 4, "gamma": 0.5,
                "samples_per_prompt": 8, "temperature": 1.0, "learning_rate": 1e-6, "kl_coef": 0.001}  # fmt: skip
    for trainer, values in composed.items():
        assert values == expected, trainer
    # the default profile, chosen the same way, differs where the profiles differ
    default = train_composed("progress-sql", tiny_chat_model, tmp_path / "default", monkeypatch)
    assert (default["reward"], default["odt"]) == ("progressive", PROFILES["progress-sql"].odt_config())
    assert verl_composed("progress-sql") == skyrl_composed("progress-sql") == default


def test_the_verl_loop_refuses_a_profile_the_reward_does_not_run() -> None:
    from progress_sql.errors import ConfigError

    cfg = {"reward": {"custom_reward_function": {"reward_kwargs": {"profile": "paper"}}}}
    assert loop_profile(None, cfg) == loop_profile("paper", cfg) == "paper"
    assert loop_profile(None, {}) == "progress-sql"
    with pytest.raises(ConfigError, match=r"reward_kwargs\.profile paper"):
        loop_profile("progress-sql", cfg)


def test_ablate_model_runs_two_arms_under_the_paper_profile(
    tmp_path: Path, music_dir: Path, tiny_chat_model: Path, heldout_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ablate --model <tiny chat model folder> --profile paper``: the recipe that trains the folder (a
    test recipe with the smallest budgets), its arms on the paper's environment and reward."""
    recipe = pretrained.Recipe(
        name="tiny-test", description="the tiny chat model, smallest budgets", model=str(tiny_chat_model),
        prompt="small", task=str(music_dir / "questions.json"), questions=(),
        warm_start=WarmStartSettings(steps=2, batch_size=2, examples=4, warmup=1, two_turn_share=0.5),
        heldout=HeldOut(task=str(heldout_dir / "questions.json"), size=4, data_dir=str(heldout_dir)),
        rl={"turns": 2, "steps": 1, "prompts_per_step": 2, "generations": 2, "max_new_tokens": 8,
            "max_completion_tokens": 40, "save_steps": 1, "updates_per_batch": 1, "per_device_batch": 4},
        threads=1, rl_prompts=4, trainable_layers=1,
    )  # fmt: skip
    monkeypatch.setitem(pretrained.RECIPES, recipe.name, recipe)  # type: ignore[index]
    out = tmp_path / "ablate"
    result = runner.invoke(app, ["ablate", "--model", str(tiny_chat_model), "--data-dir", str(music_dir),
                                 "--profile", "paper", "--arms", "progressive,one-shot", "--out", str(out),
                                 "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["settings"]["profile"] == PROFILES["paper"].settings()
    assert summary["settings"]["model"] == str(tiny_chat_model)
    runs = {record["arm"]: record for record in map(json.loads, (out / "samples.jsonl").read_text().splitlines())}
    assert set(runs) == {"progressive", "one-shot"}
    # the progressive arm trains with the profile's reward (Eq. 1-4 as printed), the one-shot arm with its own
    assert runs["progressive"]["settings"]["reward"] == "progressive-paper"
    assert runs["one-shot"]["settings"]["reward"] == "one-shot"
