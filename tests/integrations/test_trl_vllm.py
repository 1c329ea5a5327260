"""Real ``GRPOTrainer(use_vllm=True)`` steps through TRL's own vLLM code (``VLLMGeneration``, weight
sync, ``extract_logprobs``, the importance-sampling correction, on as by default) in colocate and
server mode, with the engine replaced by a CPU stand-in that answers in vLLM's shapes
(tests/integrations/vllm_stand_in.py): the multi-turn rollout must hand TRL the sampling
log-probability of every completion token."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.tasks import load_task
from progress_sql.env import EnvConfig
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import TrlRollout, VLLMGenerator, grpo_trainer
from progress_sql.prompts import CompactFormat
from tests.integrations import vllm_stand_in

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
FORMAT = CompactFormat()
TURN_TOKENS = 6
PEAK = 10.0


class Recording:
    """Wraps the rollout function and keeps what it returned to TRL."""

    def __init__(self, rollout: TrlRollout) -> None:
        self.rollout = rollout
        self.outputs: list[dict[str, Any]] = []

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        output = self.rollout(prompts, trainer)
        self.outputs.append(output)
        return output


def train_through_vllm(
    mode: str, tiny_tokenizer: Any, music_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, Recording, list[dict[str, float]]]:
    import torch
    import transformers

    from tests.tiny_lm import tiny_model

    folder = tmp_path / "policy"  # vLLM loads the policy from its folder, as for a real model
    policy = tiny_model(tiny_tokenizer)
    with torch.no_grad():  # a peaked policy: a log-probability paired with the wrong token is far off
        policy.model.embed_tokens.weight.mul_(PEAK)
    policy.save_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    vllm_stand_in.install(monkeypatch, str(folder), tiny_tokenizer.eos_token_id)
    torch.manual_seed(0)
    examples = load_task(str(music_dir / "questions.json"), music_dir)[:2]
    prompts = [FORMAT.prompt(e.db_id, e.question) for e in examples]
    args = dict(
        output_dir=str(tmp_path / "out"), use_cpu=True, per_device_train_batch_size=4, num_generations=4,
        max_steps=2, max_completion_length=4 * (TURN_TOKENS + 40), learning_rate=0.05, logging_steps=1,
        report_to="none", save_strategy="no", disable_tqdm=True, dataloader_num_workers=0, seed=0,
        loss_type="grpo", beta=0.0, temperature=1.0, bf16=False,  # float32 on both sides: they agree to rounding
        use_vllm=True, vllm_mode=mode, vllm_importance_sampling_correction=True,
        generation_kwargs={"max_tokens": TURN_TOKENS},  # the per-turn limit
    )  # fmt: skip
    with ExecutionPool(workers=1) as pool:
        rollout = Recording(
            TrlRollout(examples, tiny_tokenizer, FORMAT, VLLMGenerator(tiny_tokenizer.eos_token_id),
                       env_config=EnvConfig(max_turns=2, timeout_s=2.0), pool=pool)
        )  # fmt: skip
        trainer = grpo_trainer(model, tiny_tokenizer, rollout, prompts, reward="progressive", args=args)
        assert trainer.vllm_importance_sampling_correction  # the correction is on
        trainer.train()
    return trainer, rollout, [entry for entry in trainer.state.log_history if "loss" in entry]


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_grpo_steps_through_vllm_with_sampling_logprobs(
    mode: str, tiny_tokenizer: Any, music_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer, rollout, logs = train_through_vllm(mode, tiny_tokenizer, music_dir, tmp_path, monkeypatch)
    assert trainer.state.global_step == 2
    stand_in = vllm_stand_in.LLM if mode == "colocate" else vllm_stand_in.VLLMClient
    (engine_owner,) = stand_in.instances
    engine = engine_owner.engine
    assert engine.loads >= 2  # TRL pushed the policy's weights before each step's rollout
    assert len(rollout.outputs) == 2
    for output in rollout.outputs:
        assert output["logprobs"] is not None
        for ids, mask, logprobs in zip(output["completion_ids"], output["env_mask"], output["logprobs"], strict=True):
            assert len(logprobs) == len(ids) == len(mask)
            # environment tokens (the feedback, the eos closing a turn cut by the limit) carry 0.0, as
            # TRL's own tool loop gives tool results; every sampled token a log-probability below 0
            assert all(lp == 0.0 for lp, m in zip(logprobs, mask, strict=True) if m == 0)
            assert all(lp is not None and lp < 0.0 for lp, m in zip(logprobs, mask, strict=True) if m == 1)
        sampled = [lp for lps, mask in zip(output["logprobs"], output["env_mask"], strict=True)
                   for lp, m in zip(lps, mask, strict=True) if m == 1]  # fmt: skip
        assert max(sampled) - min(sampled) > 1.0  # the check below can tell tokens apart
        assert any(0 in mask for mask in output["env_mask"])  # multi-turn: feedback was appended
        assert all(sum(mask) <= 2 * TURN_TOKENS for mask in output["env_mask"])  # the per-turn limit held
    for entry in logs:
        # the engine samples with the policy's current weights, so TRL's recomputed log-probabilities
        # agree with the sampling ones token by token: a log-probability shifted by one token, or a
        # feedback token counted as sampled, would move these far from 0 and 1
        assert entry["sampling/sampling_logp_difference/max"] < 1e-4
        assert entry["sampling/importance_sampling_ratio/mean"] == pytest.approx(1.0, abs=1e-4)
        assert entry["sampling/importance_sampling_ratio/min"] == pytest.approx(1.0, abs=1e-3)
    if mode == "server":
        (client,) = vllm_stand_in.VLLMClient.instances
        assert all(call["max_tokens"] == TURN_TOKENS and call["n"] == 1 for call in client.calls)


def test_modes_whose_processes_cannot_stay_in_step_are_refused(tiny_tokenizer: Any) -> None:
    """Colocated vLLM with tensor parallelism slices every turn's batch by an equal count per process
    (trl vllm_generation.py:685-691,735-741), and a sharded model (ZeRO-3: accelerate's
    ``state.deepspeed_plugin.zero_stage``; FSDP: the trainer's ``is_fsdp_enabled``) gathers weights at
    every forward: with per-process numbers of live conversations, both would wait on each other."""
    from types import SimpleNamespace

    from progress_sql.errors import ConfigError
    from progress_sql.integrations.trl import ModelGenerator

    colocated_tp = SimpleNamespace(vllm_generation=SimpleNamespace(mode="colocate", tensor_parallel_size=2))
    with pytest.raises(ConfigError, match="tensor_parallel_size > 1"):
        VLLMGenerator(tiny_tokenizer.eos_token_id)([[1, 2]], colocated_tp)
    zero3 = SimpleNamespace(
        accelerator=SimpleNamespace(
            num_processes=2, state=SimpleNamespace(deepspeed_plugin=SimpleNamespace(zero_stage=3))
        )
    )
    fsdp = SimpleNamespace(is_fsdp_enabled=True, accelerator=SimpleNamespace(num_processes=2, state=SimpleNamespace()))
    for trainer in (zero3, fsdp):
        with pytest.raises(ConfigError, match="ZeRO-3 or FSDP"):
            ModelGenerator(tiny_tokenizer)([[1, 2]], trainer)
