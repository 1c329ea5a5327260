"""Fixtures of the verl tests (run in the verl environment by scripts/test.sh; see /conftest.py).

Nothing is downloaded: a byte-level BPE tokenizer with ChatML special tokens and a chat template is
trained here and saved beside a Qwen2 ``config.json`` (so verl infers ``hf_model_type`` "qwen2"
exactly as for Qwen2.5-Coder), the databases are built from committed SQL scripts, and the model
server is :class:`ScriptedServer`, which answers each conversation's n-th assistant turn from a
script.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import transformers
import verl
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.replica import TokenOutput

from progress_sql.export.build import export_items
from progress_sql.export.formats import build_rows, get_format
from progress_sql.types import Example
from tests.chatml_tokenizer import QUESTIONS, save_chatml_tokenizer
from tests.conftest import build_database

VERL_CONFIG_DIR = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")


def compose_verl(overrides: Sequence[str] = ()) -> DictConfig:
    """verl's own ``ppo_trainer`` config with hydra overrides (a wrong key raises)."""
    with initialize_config_dir(config_dir=VERL_CONFIG_DIR, version_base=None):
        return compose(config_name="ppo_trainer", overrides=list(overrides))


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tokenizer (ChatML specials, eos = <|im_end|>) and a Qwen2 config, as a model folder."""
    folder = tmp_path_factory.mktemp("qwen2_tiny")
    tokenizer = save_chatml_tokenizer(folder)
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    config.architectures = ["Qwen2ForCausalLM"]
    config.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def music_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("music.sql", tmp_path_factory.mktemp("databases"))


@pytest.fixture(scope="session")
def examples(music_db: Path) -> list[Example]:
    return [
        Example(i, q["question"], q["db_id"], str(music_db), q["query"], difficulty=q["hardness"])
        for i, q in enumerate(QUESTIONS)
    ]


def rows_of(examples: Sequence[Example]) -> list[dict[str, Any]]:
    """verl rows with the paper's opening messages, as ``progress-sql export --format verl`` writes them."""
    return build_rows(export_items([("spider", e) for e in examples]), get_format("verl"))


def write_parquet(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    pd.DataFrame(list(rows)).to_parquet(path)
    return path


def dataset_batch(parquet: Path, tokenizer: Any, config: DictConfig, repeat: int = 1) -> DataProto:
    """The rows as verl's trainer hands them to the rollout: RLHFDataset, collate_fn, DataProto."""
    dataset = RLHFDataset(str(parquet), tokenizer, config.data)
    items = [dataset[i] for i in range(len(dataset)) for _ in range(repeat)]
    return DataProto.from_single_dict(collate_fn(items), meta_info={"validate": False, "global_steps": 1})


#: vLLM caches the prompt in blocks of this many tokens (vLLM's default block size).
VLLM_BLOCK_SIZE = 16


class ScriptedServer:
    """Stands in for verl's LLM server client (``LLMServerClient.generate``): the n-th assistant turn
    of the conversation about a question gets ``scripts[question][n]`` (then eos), cut at the
    request's ``max_tokens``. The ``TokenOutput`` has the fields verl's vLLM server fills
    (``verl/workers/rollout/vllm_rollout/vllm_async_server.py`` ``generate``: ``extra_fields``
    ``global_steps`` (the weights' version, set by ``set_global_steps``) and ``num_cached_tokens``
    (vLLM's prefix-cache hits: the earlier turns' prompt, whole blocks), ``stop_reason``
    ``completed``, ``num_preempted``) and the two the client adds (``verl/workers/rollout/llm_server.py``
    ``LLMServerClient.generate``: ``min_global_steps`` and ``max_global_steps``, both ``global_steps``)."""

    def __init__(self, tokenizer: Any, scripts: dict[str, list[str]], global_steps: int = 0) -> None:
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.global_steps = global_steps
        self.calls: list[tuple[str, int, int]] = []  # (question, turn, max_tokens), in call order
        self.extra_fields: list[tuple[str, int, dict[str, Any]]] = []  # (question, turn, extra_fields), in call order
        self._prompts: dict[str, list[int]] = {}  # the last prompt of each conversation

    def _cached_tokens(self, question: str, prompt_ids: list[int]) -> int:
        earlier = self._prompts.get(question, [])
        common = next(
            (i for i, (a, b) in enumerate(zip(earlier, prompt_ids, strict=False)) if a != b),
            min(len(earlier), len(prompt_ids)),
        )
        self._prompts[question] = list(prompt_ids)
        return common // VLLM_BLOCK_SIZE * VLLM_BLOCK_SIZE

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **_: Any
    ) -> TokenOutput:
        text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        question = next(q for q in self.scripts if q in text)
        turn = text.count("<|im_start|>assistant") - 1
        self.calls.append((question, turn, int(sampling_params["max_tokens"])))
        ids = [
            *self.tokenizer.encode(self.scripts[question][turn], add_special_tokens=False),
            self.tokenizer.eos_token_id,
        ]
        ids = ids[: sampling_params["max_tokens"]]
        logprobs = [-0.5] * len(ids) if sampling_params.get("logprobs") else None
        extra_fields = {
            "global_steps": self.global_steps,
            "num_cached_tokens": self._cached_tokens(question, prompt_ids),
        }
        extra_fields |= {"min_global_steps": self.global_steps, "max_global_steps": self.global_steps}
        self.extra_fields.append((question, turn, dict(extra_fields)))
        return TokenOutput(
            token_ids=ids, log_probs=logprobs, stop_reason="completed", num_preempted=0, extra_fields=extra_fields
        )


def answer(sql: str) -> str:
    return f"<think>look at the schema</think><sql>{sql}</sql>"


def object_array(values: Sequence[Any]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array
