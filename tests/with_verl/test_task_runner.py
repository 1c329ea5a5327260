"""The smoke recipe through the entry point's own path on CPU, as far as verl 0.9.1 goes without a GPU.

:func:`progress_sql.integrations.verl.main.train` (the body of ``python -m
progress_sql.integrations.verl.main``) runs verl's checks and then verl's ``run_ppo``, which starts a
local Ray from the config's ``ray_kwargs`` and runs the project's :data:`TaskRunner` as a Ray actor
(``task_runner_class.remote()``, ``ray.get(runner.run.remote(config))``), here on the smoke recipe's
composed config pointed at exported parquet files and a tiny Qwen2 model folder. Inside that worker
``TaskRunnerV1.run`` looks up ``trainer.v1.trainer_mode=progress_sql_sync``, starts TransferQueue and
builds :class:`ProgressSQLTrainer`, whose ``init`` loads the tokenizer and both datasets and maps the
roles to a resource pool, and then stops where verl needs GPUs: ``ResourcePoolManager`` requires
``n_gpus_per_node * nnodes`` GPUs in the Ray cluster (``verl/single_controller/ray/base.py:226-242``,
``_check_resource_available``, called by ``create_resource_pool`` at base.py:216, from
``verl/trainer/ppo/v1/trainer_base.py:231`` in ``PPOTrainer._setup``). Everything after it is GPU-only
in verl 0.9.1: the pool's placement groups reserve one GPU per bundle (base.py:210, ``use_gpu=True``),
the FSDP workers' ``init_model``, the vLLM servers (``LLMServerManager``), weight sync, and so
``fit()``; the CPU-capable parts of ``fit()`` (dataloader, rollout submission, replay buffer,
advantages, the step metrics) run in ``test_v1_trainer.py``. The actor is named, so after the stop the
test reads the worker's own state through Ray's ``__ray_call__``; nothing of verl is replaced.

About 40 s: Ray, TransferQueue and verl's imports in a fresh worker process."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
from omegaconf import DictConfig
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.trainer.ppo.v1 import get_trainer_cls
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
from verl.utils.config import validate_config

from progress_sql.integrations.verl.main import train
from progress_sql.integrations.verl.trainer import TRAINER_MODE, ProgressSQLTrainer, TaskRunner
from progress_sql.types import Example
from tests.conftest import REPO_ROOT
from tests.with_verl.conftest import QUESTIONS, compose_verl, rows_of, write_parquet
from tests.with_verl.test_recipes import recipe_overrides

RUNNER_NAME = "progress_sql_task_runner"
TRAIN_ROWS = 8  # the smoke recipe's data.train_batch_size: one full batch (the dataloader drops the rest)
VALIDATED = "[validate_config] All configuration checks passed successfully!"


@pytest.fixture
def ray_cluster() -> Iterator[None]:
    """Ray is started by verl's ``run_ppo`` itself (from ``ray_kwargs``); shut it down afterwards."""
    assert not ray.is_initialized()
    try:
        yield
    finally:
        ray.shutdown()


def smoke_config(tmp_path: Path, model_dir: Path, music_db: Path) -> DictConfig:
    """The smoke recipe's overrides with local data and model, plus a small local Ray."""
    examples = [
        Example(i, q["question"], q["db_id"], str(music_db), q["query"], difficulty=q["hardness"])
        for i, q in enumerate((QUESTIONS * 2)[:TRAIN_ROWS])
    ]
    train_files = write_parquet(rows_of(examples), tmp_path / "train.parquet")
    val_files = write_parquet(rows_of(examples[: len(QUESTIONS)]), tmp_path / "validation.parquet")
    overrides = recipe_overrides(
        "smoke",
        MODEL=str(model_dir),
        TRAIN_FILES=str(train_files),
        VAL_FILES=str(val_files),
        CHECKPOINT_DIR=str(tmp_path / "checkpoints"),
    )
    python_path = os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)])
    local_ray = [
        "ray_kwargs.ray_init.num_cpus=2",
        "+ray_kwargs.ray_init.include_dashboard=false",
        f"+ray_kwargs.ray_init.object_store_memory={200 * 1024**2}",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.PYTHONPATH='{python_path}'",
        "+ray_kwargs.ray_init.runtime_env.env_vars.OMP_NUM_THREADS='1'",
        # TransferQueue's storage units are Ray actors of one CPU each: verl's 8 would wait for CPUs forever.
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
    ]
    return compose_verl([*overrides, *local_ray])


def worker_state(runner: Any) -> dict[str, Any]:
    """Read inside the TaskRunner's worker after its ``run``: what was selected and built there, and
    verl's ``validate_config`` on the config as the worker resolved it."""
    trainer, config = runner.trainer, runner.config
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    return {
        "pid": os.getpid(),
        "registered": get_trainer_cls(TRAINER_MODE),
        "trainer": type(trainer),
        "transfer_queue": config.transfer_queue.enable,
        "tokenizer_eos": trainer.tokenizer.eos_token,
        "rows": (len(trainer.train_dataset), len(trainer.val_dataset)),
        "trainer_mode": trainer.trainer_mode,
        "replay_buffer": type(trainer.replay_buffer),
        "train_batches": len(trainer.train_dataloader),
        "total_training_steps": trainer.total_training_steps,
        "roles": sorted(str(role) for role in trainer.role_worker_mapping),
        "pools": dict(trainer.resource_pool_manager.resource_pool_spec),
        "workers_built": hasattr(trainer, "actor_rollout_wg"),
    }


def test_the_task_runner_runs_the_smoke_recipe_in_a_ray_worker_until_verl_needs_a_gpu(
    ray_cluster: None, tmp_path: Path, model_dir: Path, music_db: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    config = smoke_config(tmp_path, model_dir, music_db)
    with pytest.raises(ValueError, match="Total available GPUs 0 is less than total desired GPUs 1") as stop:
        train(config, task_runner_class=TaskRunner.options(name=RUNNER_NAME))
    # The stop is verl's GPU check of the resource pool, inside the worker's trainer init.
    assert isinstance(stop.value, ray.exceptions.RayTaskError)
    for frame in ("_TaskRunner.run", "_setup", "create_resource_pool", "_check_resource_available"):
        assert frame in str(stop.value)
    assert VALIDATED in capfd.readouterr().out  # train's check_config, in the driver, as main_ppo.main does
    state = ray.get(ray.get_actor(RUNNER_NAME).__ray_call__.remote(worker_state))
    assert state["pid"] != os.getpid()  # a real Ray worker process
    assert state["registered"] is state["trainer"] is ProgressSQLTrainer
    assert state["transfer_queue"] is True  # TaskRunnerV1.run turns it on and starts TransferQueue
    assert state["tokenizer_eos"] == "<|im_end|>"  # the tiny model folder's tokenizer
    assert state["rows"] == (TRAIN_ROWS, len(QUESTIONS))
    # The synchronous trainer's replay buffer and one batch of train_batch_size prompts per step (under
    # the mode name progress_sql_sync, verl's string tests would make it ReplayBufferAsync and 8 x 1).
    assert (state["trainer_mode"], state["replay_buffer"]) == ("sync", ReplayBuffer)
    assert (state["train_batches"], state["total_training_steps"]) == (1, 4)
    assert state["roles"] == ["actor_rollout_ref"]  # GRPO with a KL loss: actor, rollout and reference
    assert state["pools"] == {"global_pool": [1]}  # the smoke recipe's one GPU on one node
    assert not state["workers_built"]
