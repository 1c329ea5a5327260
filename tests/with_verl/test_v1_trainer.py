"""One training step of verl 0.9.1's default (v1) trainer around the agent loop, on CPU: a local Ray
cluster holds TransferQueue (``tq.init``, as ``TaskRunnerV1.run`` does) and verl's ``RewardLoopWorker``
as a Ray actor (as ``RewardLoopManager`` starts it); the loop runs in ``AgentLoopWorkerTQ`` (the v1
worker, here in this process) against :class:`ScriptedServer`, which answers with the ``TokenOutput``
fields of verl's vLLM server and client. The trainer is :class:`ProgressSQLTrainer`; its own
dataloader, ``_submit_batch_to_rollout``, replay buffer, ``_compute_advantage`` and ``_compute_metrics``
run as in ``PPOTrainer.fit``/``_step_once``. Left out: the GPU stages between them (old/ref log-probs,
the actor update, weight sync), which read and write other fields."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import ray
import transfer_queue as tq
from omegaconf import OmegaConf
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.trainer.ppo.v1 import get_trainer_cls
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ
from verl.utils.debug import marked_timer

import progress_sql.integrations.verl.reward as reward_module
from progress_sql.integrations.verl import AGENT_LOOPS_YAML, TURNS_KEY
from progress_sql.integrations.verl.agent_loop import STOP_KEY
from progress_sql.integrations.verl.reward import DATABASE_ERROR_KEY
from progress_sql.integrations.verl.trainer import TRAINER_MODE, ProgressSQLTrainer
from progress_sql.types import Example
from tests.conftest import REPO_ROOT
from tests.with_verl.conftest import ScriptedServer, answer, compose_verl, rows_of, write_parquet

PROMPTS, SAMPLES = 3, 2  # data.train_batch_size, rollout.n
WRONG = answer("SELECT count(*) FROM concert")


@pytest.fixture(scope="module")
def transfer_queue() -> Iterator[None]:
    """A local Ray cluster with TransferQueue's controller and one storage unit."""
    python_path = os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)])
    env = {"PYTHONPATH": python_path, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024**2,
        log_to_driver=False,
        runtime_env={"env_vars": env},
    )
    try:
        tq.init(OmegaConf.create({"backend": {"SimpleStorage": {"num_data_storage_units": 1}}}))
        yield
    finally:
        tq.close()
        ray.shutdown()


class WorkerThread:
    """Stands in for ``AgentLoopManagerTQ``'s dispatch (``agent_loop_tq.py``: ``generate_sequences``
    hands the batch to its Ray worker actors and returns once the loops are spawned): one
    ``AgentLoopWorkerTQ`` in this process, on an event loop that keeps running, as in an async actor,
    so that its fire-and-forget loops go on after the call returns."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def generate_sequences(self, prompts: Any) -> None:
        asyncio.run_coroutine_threadsafe(self.worker.generate_sequences(prompts), self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


def stand_in_for_the_actors_log_probs(batch: Any) -> None:
    """``old_log_probs`` without the GPU actor: the rollout's, as ``_compute_old_log_prob`` writes them
    in its bypass mode (``trainer_base.py``); the rollout correction of ``_compute_advantage`` reads them."""
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["rollout_log_probs"])
    data["old_log_probs"] = data.pop("rollout_log_probs")
    tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=data)


def v1_config(model_dir: Path, train: Path) -> Any:
    return compose_verl(
        [
            f"actor_rollout_ref.model.path={model_dir}",
            "actor_rollout_ref.rollout.name=vllm",
            "actor_rollout_ref.rollout.prompt_length=4096",
            "actor_rollout_ref.rollout.response_length=1024",
            f"actor_rollout_ref.rollout.n={SAMPLES}",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={AGENT_LOOPS_YAML}",
            "algorithm.adv_estimator=grpo",
            f"data.train_files={train}",
            f"data.val_files={train}",
            f"data.train_batch_size={PROMPTS}",
            "data.max_prompt_length=4096",
            "data.dataloader_num_workers=0",
            "data.shuffle=false",
            f"reward.custom_reward_function.path={reward_module.__file__}",
            "reward.custom_reward_function.name=compute_score",
            "+reward.custom_reward_function.reward_kwargs.reward=progressive",
            "trainer.n_gpus_per_node=1",
            f"trainer.v1.trainer_mode={TRAINER_MODE}",
        ]
    )


def test_one_v1_training_step_computes_verls_metrics_and_ours(
    transfer_queue: None, model_dir: Path, examples: list[Example], tmp_path: Path
) -> None:
    """Three prompts, two samples each: one solved at the second turn, one at the first, one whose
    database is missing on this node. The step's metrics are verl's (the model-version tags that the
    loop must copy from each TokenOutput, or ``_compute_metrics`` raises TypeError) and ours."""
    retry, first_try = examples[0], examples[1]
    lost = replace(examples[2], db_path=str(tmp_path / "not_on_this_node.sqlite"))
    train = write_parquet(rows_of([retry, first_try, lost]), tmp_path / "train.parquet")
    config = v1_config(model_dir, train)
    assert get_trainer_cls(config.trainer.v1.trainer_mode) is ProgressSQLTrainer

    trainer = ProgressSQLTrainer(config)
    trainer._init_tokenizer()
    trainer._init_dataloader()
    trainer._init_resource_pool_mgr()
    trainer.global_steps = 1  # fit() starts at 1; the weights the rollout used are version 0
    scripts = {
        retry.question: [WRONG, answer(retry.gold_sql)],
        first_try.question: [answer(first_try.gold_sql)],
        lost.question: [answer(lost.gold_sql)],
    }
    server = ScriptedServer(trainer.tokenizer, scripts, global_steps=0)
    reward_worker = ray.remote(RewardLoopWorker).remote(config, None)  # as RewardLoopManager starts them
    worker = AgentLoopWorkerTQ.__ray_actor_class__(
        config, llm_client=server, reward_loop_worker_handles=[reward_worker]
    )
    trainer.agent_loop_manager = manager = WorkerThread(worker)
    try:
        metrics: dict[str, Any] = {}
        timing_raw: dict[str, float] = {}
        with marked_timer("step", timing_raw):
            trainer.prepare_step()  # the dataloader's batch, registered in TransferQueue and dispatched
            with marked_timer("gen", timing_raw):
                batch, sample_metrics = trainer.replay_buffer.sample(
                    global_steps=trainer.global_steps, partition_id="train", batch_size=PROMPTS
                )
            metrics.update(sample_metrics)
            stand_in_for_the_actors_log_probs(batch)
            batch = trainer._compute_advantage(batch, metrics)
        trainer._compute_metrics(batch, metrics, timing_raw, global_steps=trainer.global_steps, epoch=0)
        stored = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
        extra_fields = [getattr(value, "data", value) for value in stored["extra_fields"]]
    finally:
        manager.close()

    assert len(batch.keys) == PROMPTS * SAMPLES
    # verl's own metrics, the staleness ones built from the tags of the copied fields
    assert metrics["training/off_policy/trajectory_spans/mean"] == 1
    assert metrics["training/off_policy/trajectory_staleness/max"] == 0
    assert metrics["training/num_turns/max"] == 4  # prompt, answer, feedback, answer
    assert metrics["critic/score/mean"] == pytest.approx(metrics["progress_sql/reward/score/mean"])
    assert all((fields["min_global_steps"], fields["max_global_steps"]) == (0, 0) for fields in extra_fields)
    two_turns = [fields for fields in extra_fields if len(fields[TURNS_KEY]) == 2]
    assert len(two_turns) == SAMPLES
    calls = [
        (turn, fields["num_cached_tokens"])
        for question, turn, fields in server.extra_fields
        if question == retry.question
    ]
    first_turns = sorted(cached for turn, cached in calls if turn == 0)
    assert first_turns != sorted(cached for turn, cached in calls if turn == 1)
    assert sorted(fields["num_cached_tokens"] for fields in two_turns) == first_turns  # the first turn's, as upstream

    # ours: every trajectory scored, the lost database one with 0 and marked
    lost_rows = [fields for fields in extra_fields if fields[STOP_KEY] == "database_error"]
    assert len(lost_rows) == SAMPLES
    assert all("not_on_this_node" in fields[DATABASE_ERROR_KEY] for fields in lost_rows)
    assert all(fields["reward_extra_info"]["score"] == 0.0 for fields in lost_rows)
    assert all(fields["reward_extra_info"]["database_error"] == 1 for fields in lost_rows)
    scores = [fields["reward_extra_info"]["score"] for fields in extra_fields]
    assert metrics["progress_sql/reward/score/mean"] == pytest.approx(sum(scores) / len(scores))
    assert metrics["progress_sql/database_error/rate"] == pytest.approx(1 / 3)
    assert metrics["progress_sql/gold_invalid/rate"] == 0
    assert metrics["progress_sql/stop/match/rate"] == pytest.approx(2 / 3)
    assert metrics["progress_sql/solved/rate"] == 1.0
    assert metrics["progress_sql/first_correct_turn/mean"] == pytest.approx(1.5)
    assert metrics["progress_sql/solved_at_turn/1/rate"] == pytest.approx(0.5)
    assert metrics["progress_sql/turns/mean"] == pytest.approx(1.5)
    components = set(extra_fields[0]["reward_extra_info"]) - {"score", *reward_module.TRAJECTORY_KEYS}
    assert components
    assert all(f"progress_sql/reward/{name}/mean" in metrics for name in components)
