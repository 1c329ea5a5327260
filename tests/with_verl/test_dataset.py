"""A row that ``progress-sql export --format verl`` writes loads through verl's ``RLHFDataset`` into
what the loop reads."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoTokenizer
from verl.utils.dataset.rl_dataset import RLHFDataset

from progress_sql.integrations.verl import AGENT_NAME, verl_example
from progress_sql.types import Example
from tests.with_verl.conftest import compose_verl, rows_of, write_parquet


def test_an_exported_row_loads_through_rlhf_dataset(model_dir: Path, examples: list[Example], tmp_path: Path) -> None:
    rows = rows_of(examples)
    parquet = write_parquet(rows, tmp_path / "train.parquet")
    config = compose_verl(["data.max_prompt_length=4096"]).data
    dataset = RLHFDataset(str(parquet), AutoTokenizer.from_pretrained(model_dir), config)
    assert len(dataset) == len(examples)
    for i, example in enumerate(examples):
        item = dataset[i]
        assert item["agent_name"] == AGENT_NAME
        assert [dict(m) for m in item["raw_prompt"]] == rows[i]["prompt"]
        assert item["index"] == example.index
        assert verl_example(item) == example
