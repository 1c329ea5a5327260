"""``compute_score`` called by verl's own reward loop (``RewardLoopWorker`` with the ``naive``
manager, configured through ``reward.custom_reward_function.*``) on hand-built batches."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.protocol import DataProto

import progress_sql.integrations.verl.reward as reward_module
from progress_sql.env.core import EnvConfig, SQLRefineEnv
from progress_sql.env.records import TurnRecord, trajectory_of
from progress_sql.integrations.verl import TURNS_KEY, compute_score
from progress_sql.rewards.progressive import ProgressiveConfig, progressive_reward
from progress_sql.types import Example
from tests.with_verl.conftest import answer, compose_verl, object_array, rows_of


def reward_loop_score(
    model_dir: Path, example: Example, response: str, tool_extra_fields: dict[str, Any] | None, **reward_kwargs: Any
) -> dict[str, Any]:
    """verl's RewardLoopWorker, built inside the running event loop as verl does, scores one trajectory."""

    async def score() -> dict[str, Any]:
        worker = reward_worker(model_dir, **reward_kwargs)
        result: dict[str, Any] = await worker.compute_score(batch(worker, example, response, tool_extra_fields))
        return result

    return asyncio.run(score())


def reward_worker(model_dir: Path, **reward_kwargs: Any) -> Any:
    overrides = [
        f"actor_rollout_ref.model.path={model_dir}",
        "actor_rollout_ref.rollout.name=vllm",
        f"reward.custom_reward_function.path={reward_module.__file__}",
        "reward.custom_reward_function.name=compute_score",
        *[f"+reward.custom_reward_function.reward_kwargs.{key}={value}" for key, value in reward_kwargs.items()],
    ]
    return RewardLoopWorker(compose_verl(overrides))


def batch(worker: Any, example: Example, response: str, tool_extra_fields: dict[str, Any] | None) -> DataProto:
    """One trajectory as verl's agent loop worker hands it to the reward loop."""
    row = rows_of([example])[0]
    tokenizer = worker.input_tokenizer
    prompt = tokenizer.apply_chat_template(row["prompt"], tokenize=True, add_generation_prompt=True, return_dict=False)
    response_ids = [*tokenizer.encode(response, add_special_tokens=False), tokenizer.eos_token_id]
    prompts, responses = torch.tensor([list(prompt)]), torch.tensor([response_ids])
    input_ids = torch.cat([prompts, responses], dim=1)
    tensors = TensorDict(
        {
            "prompts": prompts,
            "responses": responses,
            "input_ids": input_ids,
            "attention_mask": torch.ones_like(input_ids),
        },
        batch_size=1,
    )
    non_tensors = {
        "data_source": object_array([row["data_source"]]),
        "reward_model": object_array([row["reward_model"]]),
        "extra_info": object_array([dict(row["extra_info"])]),
        "__num_turns__": np.array([2 * len((tool_extra_fields or {}).get(TURNS_KEY, [None]))]),
    }
    if tool_extra_fields is not None:
        non_tensors["tool_extra_fields"] = object_array([tool_extra_fields])
    return DataProto(batch=tensors, non_tensor_batch=non_tensors)


def test_the_reward_loop_scores_the_record_like_the_reward(model_dir: Path, examples: list[Example]) -> None:
    example = examples[1]
    texts = [answer("SELECT name FROM singer"), answer(example.gold_sql)]
    with SQLRefineEnv(EnvConfig(max_turns=4)) as env:
        env.reset(example)
        records = [env.step(text).info.to_dict() for text in texts]
    extra_fields = {TURNS_KEY: records, "turn_scores": [], "tool_rewards": []}
    result = reward_loop_score(model_dir, example, "".join(texts), extra_fields, gamma=0.8, omega_acc=3.0)

    turns = trajectory_of([TurnRecord.from_dict(record) for record in records])
    expected = progressive_reward(turns, ProgressiveConfig(gamma=0.8, omega_acc=3.0))
    assert expected.component("late") == 3.0 * 0.8  # the weights from reward_kwargs reached the reward
    assert result["reward_score"] == expected.total
    direct = compute_score("spider", "", example.gold_sql, {TURNS_KEY: records}, gamma=0.8, omega_acc=3.0)
    assert result["reward_score"] == direct["score"]
    info = result["reward_extra_info"]
    assert {name: info[name] for name, _ in expected.components} == dict(expected.components)
    assert (info["num_turns"], info["k_star"], info["from_record"]) == (2, 2, 1)


def test_without_a_record_the_response_is_scored_as_one_turn(model_dir: Path, examples: list[Example]) -> None:
    example = examples[2]
    text = answer(example.gold_sql)
    result = reward_loop_score(model_dir, example, text, None)
    with SQLRefineEnv(EnvConfig(max_turns=1)) as env:
        env.reset(example)
        step = env.step(text)
    assert step.info.reward is not None
    assert step.info.match
    assert result["reward_score"] == step.info.reward.total
    assert result["reward_extra_info"]["from_record"] == 0
    assert result["reward_extra_info"]["num_turns"] == 1
