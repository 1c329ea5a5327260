"""An exported verl parquet through verl's own loader: ``RLHFDataset`` (its chat-template length
filter included), ``collate_fn`` and ``DataProto``, the path a verl trainer's batches take.

Self-contained (it builds its database and tokenizer here, nothing downloaded) and run in the verl
environment (verl and its transformers live apart from the [trl] extra).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verl", reason="the verl tests need the [verl] environment")
pytest.importorskip("pyarrow", reason="parquet export needs pyarrow")

from progress_sql.export.build import export_items, write_export
from progress_sql.export.formats import VERL_AGENT_NAME, get_format
from progress_sql.types import Example

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SCHEMA = """
CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT, age INTEGER);
INSERT INTO singer VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Rose White', 'France', 41);
"""
GOLDS = ["SELECT count(*) FROM singer", "SELECT name FROM singer WHERE country = 'France'"]


def chat_tokenizer() -> Any:
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<pad>", "<eos>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    bpe.train_from_iterator([*GOLDS, SCHEMA] * 5, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHATML
    return tokenizer


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("verl_export")
    db = folder / "database" / "music" / "music.sqlite"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as connection:
        connection.executescript(SCHEMA)
    connection.close()
    examples = [
        Example(0, "How many singers?", "music", str(db), GOLDS[0]),
        Example(1, "Singers from France?", "music", str(db), GOLDS[1], evidence="France is a country"),
        Example(7, "Absent?", "gone", str(folder / "database" / "gone" / "gone.sqlite"), "SELECT 1"),
    ]
    out = folder / "train.parquet"
    write_export(export_items([("spider-train", e) for e in examples]), get_format("verl"), out)
    return out


def dataset(path: Path, **config: Any) -> Any:
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    settings = {"prompt_key": "prompt", "max_prompt_length": 4096, "filter_overlong_prompts": True,
                "filter_overlong_prompts_workers": 1, **config}  # fmt: skip
    return RLHFDataset(str(path), chat_tokenizer(), OmegaConf.create(settings))


def test_rlhf_dataset_reads_every_row(exported: Path) -> None:
    data = dataset(exported)
    assert len(data) == 3  # every prompt passed verl's chat-template length check
    row = data[1]
    assert row["agent_name"] == VERL_AGENT_NAME
    assert row["data_source"] == "spider-train"
    assert row["reward_model"] == {"style": "rule", "ground_truth": GOLDS[1]}
    assert row["index"] == 1
    assert [m["role"] for m in row["raw_prompt"]] == ["system", "user"]
    assert "Evidence: France is a country" in row["raw_prompt"][1]["content"]
    assert "CREATE TABLE singer" in row["raw_prompt"][1]["content"]
    info = row["extra_info"]
    assert (info["db_id"], info["source_index"], info["verified"]) == ("music", 1, True)
    assert Path(info["db_path"]).is_file()
    assert data[2]["extra_info"]["verified"] is False


def test_batches_reach_dataproto_as_the_reward_reads_them(exported: Path) -> None:
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import collate_fn

    data = dataset(exported)
    batch = DataProto.from_single_dict(collate_fn([data[i] for i in range(len(data))]))
    assert len(batch) == 3
    assert [rm["ground_truth"] for rm in batch.non_tensor_batch["reward_model"]][:2] == GOLDS
    assert list(batch.non_tensor_batch["agent_name"]) == [VERL_AGENT_NAME] * 3
    assert [e["db_id"] for e in batch.non_tensor_batch["extra_info"]] == ["music", "music", "gone"]


def test_the_length_filter_tokenizes_the_exported_prompts(exported: Path) -> None:
    assert len(dataset(exported, max_prompt_length=8)) == 0  # the system prompt alone is longer
