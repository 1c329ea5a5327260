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
from verl.trainer.main_ppo import TaskRunnerV1
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.trainer.ppo.v1 import get_trainer_cls
from verl.utils.config import omega_conf_to_dataclass, validate_config
from verl.utils.device import auto_set_device

from progress_sql.integrations.trainer_setting import PAPER
from progress_sql.integrations.verl import AGENT_LOOPS_YAML, AGENT_NAME, TURNS_KEY, compute_score
from progress_sql.integrations.verl.main import check_config
from progress_sql.integrations.verl.trainer import TRAINER_MODE, ProgressSQLTrainer, TaskRunner
from tests.conftest import REPO_ROOT
from tests.integrations.trainer_values import GSPO_OWN, disagreements, verl_values
from tests.with_verl.conftest import compose_verl

RECORD = {"turn": 1, "sql": "SELECT 2", "format_ok": True, "exec_status": "ok", "match": False, "verdict": "mismatch",
          "f": 0.5, "f_struct": 0.5, "f_lex": 0.5, "tags": ["VALUES"], "response": "..."}  # fmt: skip


def recipe_overrides(name: str, **env_vars: str) -> list[str]:
    env = {
        **os.environ,
        "PROGRESS_SQL_DRY_RUN": "1",
        "PYTHON": sys.executable,
        "PYTHONPATH": str(REPO_ROOT / "src"),
        "TRAIN_FILES": "/data/train.parquet",
        "VAL_FILES": "/data/validation.parquet",
        **env_vars,
    }
    script = REPO_ROOT / "recipes" / "verl" / f"{name}.sh"
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


@pytest.mark.parametrize("name", ["grpo", "gspo", "smoke"])
def test_recipe_overrides_are_verl_keys_with_the_papers_settings(name: str) -> None:
    overrides = recipe_overrides(name, CHECKPOINT_DIR="relative/ckpt")
    assert not any(o.startswith("custom_reward_function.") for o in overrides)  # legacy, ignored by main_ppo
    config = compose_verl(overrides)
    actor, rollout, trainer = config.actor_rollout_ref.actor, config.actor_rollout_ref.rollout, config.trainer
    assert config.algorithm.adv_estimator == "grpo"
    assert rollout.temperature == 1.0
    assert actor.loss_agg_mode == "seq-mean-token-mean"
    assert actor.policy_loss.loss_mode == ("gspo" if name == "gspo" else "vanilla")
    assert config.data.train_files == "/data/train.parquet"
    if name == "smoke":  # one GPU, a 0.5B model, four steps that end with validation and a checkpoint
        assert config.actor_rollout_ref.model.path == "Qwen/Qwen2.5-Coder-0.5B-Instruct"
        assert (trainer.n_gpus_per_node, trainer.nnodes, rollout.tensor_model_parallel_size) == (1, 1, 1)
        assert trainer.total_training_steps == trainer.save_freq == trainer.test_freq == 4
        assert (rollout.n, trainer.max_actor_ckpt_to_keep) == (4, 1)
        assert Path(trainer.rollout_data_dir).is_absolute()
    else:
        assert config.actor_rollout_ref.model.path == "Qwen/Qwen2.5-Coder-7B-Instruct"
        assert rollout.n == 8
        assert trainer.n_gpus_per_node * trainer.nnodes == 8
        assert (rollout.prompt_length, rollout.response_length) == (4096, 4096)
        assert trainer.max_actor_ckpt_to_keep == 2
        assert trainer.rollout_data_dir is None  # dumps only when ROLLOUT_DATA_DIR is set
    # Checkpoints: an absolute folder per experiment, a keep limit; the v1 trainer with our metrics.
    assert trainer.default_local_dir == str(Path.cwd() / "relative" / "ckpt" / trainer.experiment_name)
    assert get_trainer_cls(trainer.v1.trainer_mode) is ProgressSQLTrainer
    assert trainer.use_v1
    # The agent loop registry and T = 4.
    assert Path(rollout.agent.agent_loop_config_path) == AGENT_LOOPS_YAML
    [entry] = OmegaConf.load(rollout.agent.agent_loop_config_path)
    assert (entry.name, entry.max_turns) == (AGENT_NAME, 4)
    # verl's own loader finds our compute_score and passes the reward_kwargs.
    reward_fn = get_custom_reward_fn(config)
    assert reward_fn is not None
    raw_fn, reward_kwargs = reward_fn.args
    assert raw_fn.__name__ == compute_score.__name__
    assert reward_kwargs == {"profile": "progress-sql"}  # the profile's reward and weights (PROFILE)
    records = {TURNS_KEY: [RECORD, {**RECORD, "turn": 2, "match": True, "f": 1.0}]}
    assert reward_fn(data_source="spider", solution_str="", ground_truth="SELECT 1", extra_info=records) == (
        compute_score("spider", "", "SELECT 1", records, reward="progressive", gamma=0.5)
    )
    # verl's typed configs accept the values (loss modes, clip ranges, batch sizes).
    omega_conf_to_dataclass(actor)
    omega_conf_to_dataclass(rollout)


@pytest.mark.parametrize("name", ["grpo", "gspo"])
def test_the_composed_recipe_runs_the_trainer_setting(name: str) -> None:
    """verl's composed config, defaults included, in the trainer setting's terms: G, temperature, T, the KL
    term, 4 updates per rollout batch, aggregation, 4,096 + 4,096 tokens, batch, lr, clip (GSPO: its own
    clip range and no KL). tests/integrations/test_trainer_setting.py compares TRL and SkyRL the same way."""
    values = verl_values(compose_verl(recipe_overrides(name)))
    assert disagreements(PAPER, "verl", values, skip=GSPO_OWN if name == "gspo" else set()) == {}
    smoke = verl_values(compose_verl(recipe_overrides("smoke")))
    assert (smoke["updates_per_batch"], smoke["kl_coef"]) == (4, 0.001)  # smaller batches, the same updates and KL


@pytest.mark.parametrize(("name", "reference_policy"), [("grpo", True), ("gspo", False), ("smoke", True)])
def test_verls_validate_config_passes_on_each_recipe(
    name: str, reference_policy: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl 0.9.1's own check of a training config (``verl/utils/config.py`` ``validate_config``: batch
    sizes against the GPUs and ``rollout.n``, ``ActorConfig.validate``, the log-prob micro batches of
    the rollout and, with a KL loss, of the reference policy), called as ``main_ppo.main`` calls it:
    after ``auto_set_device``, with ``use_reference_policy``/``use_critic`` from verl's own helpers.
    Then the entry point's own checks (:func:`check_config`, what ``main`` runs before Ray)."""
    config = compose_verl(recipe_overrides(name))
    auto_set_device(config)
    assert config.trainer.device == "cuda"  # no NPU here: auto_set_device keeps verl's default
    assert (need_reference_policy(config), need_critic(config)) == (reference_policy, False)  # GRPO: no critic
    assert config.actor_rollout_ref.actor.use_kl_loss is reference_policy
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    assert "[validate_config] All configuration checks passed successfully!" in capsys.readouterr().out
    check_config(config)
    assert "[validate_config] All configuration checks passed successfully!" in capsys.readouterr().out


def test_the_entry_point_composes_the_recipe_with_verls_config(tmp_path: Path) -> None:
    """``python -m progress_sql.integrations.verl.main`` (what the recipes exec) takes the recipe's
    overrides on verl's ppo_trainer.yaml; hydra's ``--cfg job`` prints the config instead of training."""
    overrides = recipe_overrides("smoke", CHECKPOINT_DIR=str(tmp_path), ROLLOUT_DATA_DIR=str(tmp_path / "dumps"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)])}
    command = [sys.executable, "-m", "progress_sql.integrations.verl.main", *overrides, "--cfg", "job", "--resolve"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=tmp_path)
    config = OmegaConf.create(done.stdout)
    assert config.trainer.default_local_dir == str(tmp_path / "smoke")
    assert config.trainer.rollout_data_dir == str(tmp_path / "dumps")
    assert config.trainer.v1.trainer_mode == TRAINER_MODE
    assert issubclass(TaskRunner.__ray_actor_class__, TaskRunnerV1.__ray_actor_class__)


def test_a_key_verl_does_not_have_fails_to_compose() -> None:
    with pytest.raises(ConfigCompositionException):
        compose_verl(["actor_rollout_ref.actor.loss_aggregation=seq-mean-token-mean"])
