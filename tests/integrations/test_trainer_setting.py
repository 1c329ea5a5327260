"""One trainer setting across TRL, verl and SkyRL (integrations/trainer_setting.py): each trainer's
composed configuration, read back in the setting's terms (tests/integrations/trainer_values.py), agrees
with it on every field: G, temperature, T, advantage, the KL term (coefficient, placement, estimator),
optimizer updates per rollout batch, loss aggregation, the token budgets, batch, learning rate, clip
range. TRL: the real ``GRPOConfig`` that ``trainer_args`` builds from the real-model defaults; verl:
recipes/verl/*.sh's overrides as they print them (tests/with_verl/test_recipes.py composes the same with
verl's own hydra config); SkyRL: recipes/skyrl/train.sh's command line as SkyRL reads it
(``OmegaConf.from_cli``). A recipe that drifts from the setting fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from progress_sql.errors import ConfigError
from progress_sql.integrations.trainer_setting import (
    OPTIONS,
    PAPER,
    SETTINGS,
    TrainerSetting,
    markdown_table,
    ours,
    skyrl_overrides,
    trainer_setting,
    verl_overrides,
)
from tests.conftest import REPO_ROOT
from tests.integrations.trainer_values import (
    GSPO_OWN,
    NO_SUCH_BOUND,
    disagreements,
    setting_values,
    skyrl_values,
    trl_values,
    verl_values,
)

RECIPES = REPO_ROOT / "recipes"
MODEL = "Qwen/Qwen2.5-Coder-7B-Instruct"
#: The values the issue pinned down (issue 31, item 4), written out once more: a change of the setting
#: itself must be a change of this test too.
PAPER_VALUES = {
    "samples_per_prompt": 8, "temperature": 1.0, "turns": 4, "advantage": "grpo", "kl_coef": 0.001,
    "kl_placement": "loss", "kl_estimator": "k3", "updates_per_batch": 4, "loss_aggregation": "seq-mean-token-mean",
    "sequence_tokens": 8192, "prompt_tokens": 4096, "response_tokens": 4096, "turn_tokens": 1024,
    "prompts_per_batch": 64, "learning_rate": 1e-6, "clip_epsilon": 0.2,
}  # fmt: skip


def dry_run(script: Path, **env: str) -> list[str]:
    """A recipe's PROGRESS_SQL_DRY_RUN output (one argument per line), with this interpreter as PYTHON."""
    variables = {**os.environ, "PROGRESS_SQL_DRY_RUN": "1", "PYTHON": sys.executable,
                 "PYTHONPATH": str(REPO_ROOT / "src"), **env}  # fmt: skip
    done = subprocess.run(["bash", str(script)], env=variables, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def verl_config(recipe: str) -> Any:
    """recipes/verl/<recipe>.sh's overrides as one config (hydra's ``+`` dropped; the last value of a key wins)."""
    overrides = dry_run(RECIPES / "verl" / f"{recipe}.sh", TRAIN_FILES="/data/t.parquet", VAL_FILES="/data/v.parquet")
    return OmegaConf.from_dotlist([override.removeprefix("+") for override in overrides])


def skyrl_config(script: str = "train.sh", **env: str) -> Any:
    command = dry_run(RECIPES / "skyrl" / script, **env)
    assert command[1:3] == ["-m", "skyrl.train.entrypoints.main_base"]
    return OmegaConf.from_cli(command[3:])


def trl_config(processes: int = 8, **overrides: Any) -> tuple[Any, Any]:
    """The real-model defaults' ``GRPOConfig`` on ``processes`` GPUs, and the RL settings it came from."""
    from trl import GRPOConfig

    from progress_sql.training.recipe import default_rl_settings
    from progress_sql.training.rl import trainer_args

    rl = default_rl_settings(MODEL, **overrides)
    args = trainer_args(rl, Path("unused"), processes=processes)
    return GRPOConfig(**{**args, "use_cpu": True, "bf16": False}), rl


def test_the_paper_setting_has_the_issues_values_and_says_whose_each_is() -> None:
    assert setting_values(PAPER) == PAPER_VALUES
    assert trainer_setting("paper") is PAPER
    assert SETTINGS == {"paper": PAPER}
    sources = {name: item.source for name, item in PAPER.sourced().items()}
    paper = {"samples_per_prompt", "temperature", "turns", "advantage", "loss_aggregation", "sequence_tokens"}
    assert {name for name, source in sources.items() if source == "paper"} == paper
    assert all(item.why for item in PAPER.sourced().values())
    assert set(OPTIONS) == set(PAPER.sourced())  # every field has its options in the three trainers
    assert PAPER.mini_batch_prompts * PAPER.updates_per_batch.value == PAPER.prompts_per_batch.value


def test_trl_runs_the_setting() -> None:
    for processes in (1, 8):
        grpo, rl = trl_config(processes)
        assert disagreements(PAPER, "trl", trl_values(grpo, rl, processes)) == {}
        assert (grpo.loss_type, grpo.num_iterations) == ("grpo", 1)
    grpo, rl = trl_config(8, preset="gspo")  # GSPO: no KL, its clip range, the same updates and sizes
    values = trl_values(grpo, rl, 8)
    assert disagreements(PAPER, "trl", values, skip=GSPO_OWN) == {}
    assert (values["kl_coef"], values["clip_epsilon"]) == (0.0, (3e-4, 4e-4))


@pytest.mark.parametrize("recipe", ["grpo", "gspo"])
def test_verl_runs_the_setting(recipe: str) -> None:
    values = verl_values(verl_config(recipe))
    assert disagreements(PAPER, "verl", values, skip=GSPO_OWN if recipe == "gspo" else set()) == {}
    if recipe == "gspo":
        assert (values["kl_coef"], values["kl_placement"], values["clip_epsilon"]) == (0.0, None, (3e-4, 4e-4))


@pytest.mark.parametrize("algorithm", ["grpo", "gspo"])
def test_skyrl_runs_the_setting(algorithm: str) -> None:
    values = skyrl_values(skyrl_config(ALGORITHM=algorithm))
    assert disagreements(PAPER, "skyrl", values, skip=GSPO_OWN if algorithm == "gspo" else set()) == {}
    assert values["sequence_tokens"] == 8192  # not 9,216 + 1,024: a whole trajectory within the paper's budget
    if algorithm == "gspo":
        assert (values["kl_coef"], values["kl_placement"], values["clip_epsilon"]) == (0.0, None, (3e-4, 4e-4))


def test_the_three_trainers_agree_with_each_other() -> None:
    grpo, rl = trl_config(8)
    composed = {
        "trl": trl_values(grpo, rl, 8),
        "verl": verl_values(verl_config("grpo")),
        "skyrl": skyrl_values(skyrl_config()),
    }
    for name in PAPER_VALUES:
        seen = {trainer: values[name] for trainer, values in composed.items() if name not in NO_SUCH_BOUND[trainer]}
        assert len(set(map(repr, seen.values()))) == 1, (name, seen)
        assert len(seen) >= 2, name  # every field is bounded by at least two of the three


def test_the_smoke_recipes_keep_the_settings_algorithm() -> None:
    """Smaller batches and budgets, the same KL term, updates per batch, aggregation, T and temperature."""
    kept = ["temperature", "turns", "advantage", "kl_coef", "kl_placement", "kl_estimator", "updates_per_batch",
            "loss_aggregation", "clip_epsilon"]  # fmt: skip
    grpo, rl = trl_config(1, prompts_per_step=4, per_device_batch=8, max_new_tokens=512, max_completion_tokens=2048)
    smokes = {
        "trl": trl_values(grpo, rl, 1),
        "verl": verl_values(verl_config("smoke")),
        "skyrl": skyrl_values(skyrl_config("smoke.sh")),
    }
    for trainer, values in smokes.items():
        assert {name: values[name] for name in kept} == {name: PAPER_VALUES[name] for name in kept}, trainer


def test_a_change_of_the_setting_reaches_verl_and_skyrl() -> None:
    """The recipes print the overrides of the setting they are given (SETTING), so no value lives in a
    shell script as well."""
    half = TrainerSetting(**{**{f: getattr(PAPER, f) for f in ("name", *PAPER.sourced())},
                             "prompts_per_batch": ours(32, "test"), "kl_coef": ours(0.01, "test")})  # fmt: skip
    assert "data.train_batch_size=32" in verl_overrides(half)
    assert "actor_rollout_ref.actor.ppo_mini_batch_size=8" in verl_overrides(half)
    skyrl = {"trainer.train_batch_size=32", "trainer.policy_mini_batch_size=8", "trainer.algorithm.kl_loss_coef=0.01"}
    assert skyrl <= set(skyrl_overrides(half))
    unknown = subprocess.run([sys.executable, "-m", "progress_sql.integrations.trainer_setting", "verl", "nope"],
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert unknown.returncode == 2
    assert "unknown trainer setting 'nope'" in unknown.stderr
    with pytest.raises(subprocess.CalledProcessError):
        dry_run(RECIPES / "skyrl" / "train.sh", SETTING="nope")
    with pytest.raises(subprocess.CalledProcessError):
        dry_run(RECIPES / "verl" / "grpo.sh", SETTING="nope")


def test_a_setting_that_does_not_split_or_fit_is_refused() -> None:
    base = {f: getattr(PAPER, f) for f in ("name", *PAPER.sourced())}
    with pytest.raises(ConfigError, match="do not split into 3 updates"):
        TrainerSetting(**{**base, "updates_per_batch": ours(3, "test")})
    with pytest.raises(ConfigError, match="token budgets"):
        TrainerSetting(**{**base, "prompt_tokens": ours(8192, "test")})
    with pytest.raises(ConfigError, match="unknown loss aggregation"):
        TrainerSetting(**{**base, "loss_aggregation": ours("token-sum", "test")})


def test_docs_training_has_the_settings_table() -> None:
    doc = (REPO_ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    assert markdown_table(PAPER) in doc
    printed = subprocess.run([sys.executable, "-m", "progress_sql.integrations.trainer_setting", "table"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert printed.strip() == markdown_table(PAPER)
