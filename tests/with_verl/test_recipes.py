"""The verl recipes' overrides, as the scripts print them, compose against verl 0.9.1's own hydra
config (``ppo_trainer.yaml``): a key verl does not have fails here instead of on a GPU cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.utils.config import omega_conf_to_dataclass

from progress_sql.integrations.verl import AGENT_LOOPS_YAML, AGENT_NAME, TURNS_KEY, compute_score
from tests.conftest import REPO_ROOT
from tests.with_verl.conftest import compose_verl

RECORD = {"turn": 1, "sql": "SELECT 2", "format_ok": True, "exec_status": "ok", "match": False, "verdict": "mismatch",
          "f": 0.5, "f_struct": 0.5, "f_lex": 0.5, "tags": ["VALUES"], "response": "..."}  # fmt: skip


def recipe_overrides(name: str) -> list[str]:
    env = {
        **os.environ,
        "PROGRESS_SQL_DRY_RUN": "1",
        "PYTHON": sys.executable,
        "PYTHONPATH": str(REPO_ROOT / "src"),
        "TRAIN_FILES": "/data/train.parquet",
        "VAL_FILES": "/data/validation.parquet",
    }
    script = REPO_ROOT / "recipes" / "verl" / f"{name}.sh"
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


@pytest.mark.parametrize("name", ["grpo", "gspo"])
def test_recipe_overrides_are_verl_keys_with_the_papers_settings(name: str) -> None:
    overrides = recipe_overrides(name)
    assert not any(o.startswith("custom_reward_function.") for o in overrides)  # legacy, ignored by main_ppo
    config = compose_verl(overrides)
    actor, rollout = config.actor_rollout_ref.actor, config.actor_rollout_ref.rollout
    assert config.algorithm.adv_estimator == "grpo"
    assert config.actor_rollout_ref.model.path == "Qwen/Qwen2.5-Coder-7B-Instruct"
    assert (rollout.n, rollout.temperature) == (8, 1.0)
    assert config.trainer.n_gpus_per_node * config.trainer.nnodes == 8
    assert actor.loss_agg_mode == "seq-mean-token-mean"
    assert actor.policy_loss.loss_mode == ("gspo" if name == "gspo" else "vanilla")
    assert (rollout.prompt_length, rollout.response_length) == (4096, 4096)
    assert config.data.train_files == "/data/train.parquet"
    # The agent loop registry and T = 4.
    assert Path(rollout.agent.agent_loop_config_path) == AGENT_LOOPS_YAML
    [entry] = OmegaConf.load(rollout.agent.agent_loop_config_path)
    assert (entry.name, entry.max_turns) == (AGENT_NAME, 4)
    # verl's own loader finds our compute_score and passes the reward_kwargs.
    reward_fn = get_custom_reward_fn(config)
    assert reward_fn is not None
    raw_fn, reward_kwargs = reward_fn.args
    assert raw_fn.__name__ == compute_score.__name__
    assert reward_kwargs == {"reward": "progressive", "gamma": 0.5}
    records = {TURNS_KEY: [RECORD, {**RECORD, "turn": 2, "match": True, "f": 1.0}]}
    assert reward_fn(data_source="spider", solution_str="", ground_truth="SELECT 1", extra_info=records) == (
        compute_score("spider", "", "SELECT 1", records, gamma=0.5)
    )
    # verl's typed configs accept the values (loss modes, clip ranges, batch sizes).
    omega_conf_to_dataclass(actor)
    omega_conf_to_dataclass(rollout)


def test_a_key_verl_does_not_have_fails_to_compose() -> None:
    with pytest.raises(ConfigCompositionException):
        compose_verl(["actor_rollout_ref.actor.loss_aggregation=seq-mean-token-mean"])
