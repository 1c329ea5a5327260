"""A CPU stand-in for the vLLM engine behind TRL's ``VLLMGeneration`` (trl 1.16.0), for both of its
modes, answering in exactly the shapes the real ones return (read from their source):

- colocate: ``vllm.LLM`` (vllm 0.31.0 ``vllm/entrypoints/llm.py:420-430``) whose ``generate`` returns
  ``list[RequestOutput]``, each with ``outputs: list[CompletionOutput]`` carrying ``token_ids`` (the
  eos included when the sequence stopped on it) and ``logprobs: list[dict[int, Logprob]]``
  (``vllm/outputs.py:33-69,108-170``, ``vllm/logprobs.py:12-28``); with ``logprobs=0`` the dict of a
  position holds the sampled token only. TRL reads them with ``extract_logprobs``
  (trl ``generation/vllm_generation.py:70-99``) and loads weights through
  ``llm.llm_engine.model_executor.driver_worker.model_runner.model.load_weights`` (``:506-508``).
- server: TRL's ``VLLMClient`` (trl ``generation/vllm_client.py``), whose ``generate`` returns
  ``{"prompt_ids", "completion_ids", "logprobs", "logprob_token_ids"}``, ``logprobs`` shaped
  (sequences, tokens, 1) (``:370-466``); weights arrive through ``update_named_params`` (``:821-859``).

Sampling is real: a copy of the policy, loaded from the model folder as vLLM loads it and kept in sync
by TRL's weight pushes, samples each token at the request's temperature and reports the log-probability
after temperature scaling (TRL starts vLLM with ``logprobs_mode="processed_logprobs"``,
``vllm_generation.py:361``). Only the GPU kernels are missing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest


@dataclass
class Logprob:
    """vllm/logprobs.py:12-26."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutput:
    """vllm/outputs.py:33-69 (the fields TRL and this stand-in use, in their order)."""

    index: int
    text: str
    token_ids: Sequence[int]
    cumulative_logprob: float | None
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    """vllm/outputs.py:108-170."""

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: Any
    outputs: list[CompletionOutput]
    finished: bool


class SamplingParams:
    """vllm.SamplingParams as TRL builds it (``SamplingParams(**generation_kwargs)``)."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.n = int(settings.get("n", 1))
        self.temperature = float(settings.get("temperature", 1.0))
        self.max_tokens = int(settings.get("max_tokens", 16))
        self.logprobs = settings.get("logprobs")


@dataclass
class Engine:
    """The policy copy that samples: loaded from ``path``, updated by weight pushes."""

    path: str
    eos_token_id: int
    seed: int = 0
    loads: int = 0
    requests: list[int] = field(default_factory=list)  # contexts per generate call
    model: Any = None

    def __post_init__(self) -> None:
        import torch
        import transformers

        self.model = transformers.AutoModelForCausalLM.from_pretrained(self.path).eval()
        self.generator = torch.Generator().manual_seed(self.seed)

    def load_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        import torch

        parameters = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, tensor in weights:
                parameters[name].copy_(tensor)
        self.loads += 1

    def sample(
        self, prompt: list[int], max_tokens: int, temperature: float
    ) -> tuple[list[int], list[float], list[int]]:
        """Tokens, each one's processed log-probability and its vocabulary rank (1 = most likely)."""
        import torch

        tokens: list[int] = []
        logprobs: list[float] = []
        ranks: list[int] = []
        with torch.no_grad():
            for _ in range(max_tokens):
                logits = self.model(torch.tensor([prompt + tokens])).logits[0, -1].float()
                scaled = torch.log_softmax(logits / temperature, dim=-1)
                token = int(torch.multinomial(scaled.exp(), 1, generator=self.generator))
                tokens.append(token)
                logprobs.append(float(scaled[token]))
                ranks.append(int((scaled > scaled[token]).sum()) + 1)
                if token == self.eos_token_id:
                    break
        return tokens, logprobs, ranks


class LLM:
    """``vllm.LLM`` in TRL's colocate mode (one per process)."""

    engine_path = ""
    eos_token_id = -1
    instances: ClassVar[list[LLM]] = []

    def __init__(self, model: str, **settings: Any) -> None:
        self.settings = settings
        self.engine = Engine(model or self.engine_path, self.eos_token_id)
        runner = SimpleNamespace(model=self.engine)
        self.llm_engine = SimpleNamespace(
            model_executor=SimpleNamespace(driver_worker=SimpleNamespace(model_runner=runner)),
            model_config=SimpleNamespace(max_model_len=settings.get("max_model_len") or 512),
        )
        LLM.instances.append(self)

    def generate(
        self, prompts: list[dict[str, Any]], sampling_params: SamplingParams, *, use_tqdm: bool = True
    ) -> list[RequestOutput]:
        self.engine.requests.append(len(prompts))
        results = []
        for number, prompt in enumerate(prompts):
            ids = list(prompt["prompt_token_ids"])
            outputs = []
            for index in range(sampling_params.n):
                tokens, logprobs, ranks = self.engine.sample(
                    ids, sampling_params.max_tokens, sampling_params.temperature
                )
                positions = (
                    [{t: Logprob(lp, rank)} for t, lp, rank in zip(tokens, logprobs, ranks, strict=True)]
                    if sampling_params.logprobs is not None
                    else None
                )
                stopped = bool(tokens) and tokens[-1] == self.engine.eos_token_id
                outputs.append(
                    CompletionOutput(index, "", tokens, math.fsum(logprobs), positions, "stop" if stopped else "length")
                )
            results.append(RequestOutput(str(number), None, ids, None, outputs, True))
        return results

    def reset_prefix_cache(self) -> bool:
        return True


class VLLMClient:
    """TRL's ``VLLMClient`` talking to one ``trl vllm-serve`` / ``vllm serve`` process."""

    engine_path = ""
    eos_token_id = -1
    instances: ClassVar[list[VLLMClient]] = []

    def __init__(self, base_url: str | None = None, group_port: int = 51216, connection_timeout: float = 0.0) -> None:
        self.engine = Engine(self.engine_path, self.eos_token_id)
        self.calls: list[dict[str, Any]] = []
        VLLMClient.instances.append(self)

    def init_communicator(self, device: Any = 0) -> None:
        pass

    def get_server_info(self) -> dict[str, Any]:
        return {"model_config": {"logprobs_mode": "processed_logprobs"}}

    def update_named_params(self, metadata: list[tuple[str, str, list[int]]], named_params: Iterator[Any]) -> None:
        self.engine.load_weights(named_params)

    def reset_prefix_cache(self) -> None:
        pass

    def generate(
        self,
        prompts: list[list[int]],
        features: Any = None,
        n: int = 1,
        repetition_penalty: float = 1.0,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        min_p: float = 0.0,
        max_tokens: int = 16,
        logprobs: int | None = 0,
        structured_outputs_regex: str | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        settings = {"n": n, "temperature": temperature, "max_tokens": max_tokens, "logprobs": logprobs}
        settings.update(generation_kwargs or {})  # vllm_client.py:441 lets generation_kwargs override
        self.calls.append(settings)
        self.engine.requests.append(len(prompts))
        completion_ids, all_logprobs, all_token_ids = [], [], []
        for prompt in prompts:  # choices are prompt-major (vllm_client.py:456-460)
            for _ in range(int(settings["n"])):
                tokens, values, _ranks = self.engine.sample(
                    list(prompt), int(settings["max_tokens"]), float(settings["temperature"])
                )
                completion_ids.append(tokens)
                all_logprobs.append([[value] for value in values])
                all_token_ids.append([[token] for token in tokens])
        return {
            "prompt_ids": [list(p) for p in prompts],
            "completion_ids": completion_ids,
            "logprobs": all_logprobs if settings["logprobs"] is not None else None,
            "logprob_token_ids": all_token_ids if settings["logprobs"] is not None else None,
        }


def install(monkeypatch: pytest.MonkeyPatch, engine_path: str, eos_token_id: int) -> None:
    """Puts the stand-ins where TRL's vLLM generation code looks them up (it imports vLLM only
    when ``is_vllm_available()``, trl ``generation/vllm_generation.py:41-43``)."""
    from trl.generation import vllm_generation

    for cls in (LLM, VLLMClient):
        monkeypatch.setattr(cls, "engine_path", engine_path)
        monkeypatch.setattr(cls, "eos_token_id", eos_token_id)
        monkeypatch.setattr(cls, "instances", [])
    monkeypatch.setattr(vllm_generation, "is_vllm_available", lambda *args, **kwargs: True)
    monkeypatch.setattr(vllm_generation, "LLM", LLM, raising=False)
    monkeypatch.setattr(vllm_generation, "SamplingParams", SamplingParams, raising=False)
    monkeypatch.setattr(vllm_generation, "VLLMClient", VLLMClient)
    # colocate mode exports the process's rank for vLLM (vllm_generation.py:335-340): undone afterwards
    # (set then deleted, so that monkeypatch restores each variable's state from before the test)
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
