"""Fixtures of the training tests: the default dataset over the embedded databases, a tokenizer
trained on it, and torch pinned to one thread."""

from __future__ import annotations

import os
from typing import Any

import pytest

from progress_sql.data.embedded import embedded_databases
from progress_sql.prompts import CompactFormat
from progress_sql.training.templates import TemplateDataset, build_dataset

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(scope="session")
def dataset() -> TemplateDataset:
    return build_dataset(embedded_databases(), seed=0)


@pytest.fixture(scope="session")
def torch_one_thread() -> Any:
    torch = pytest.importorskip("torch", reason="training needs the [trl] extra")
    torch.set_num_threads(1)
    return torch


@pytest.fixture(scope="session")
def tokenizer(dataset: TemplateDataset, torch_one_thread: Any) -> Any:
    pytest.importorskip("transformers", reason="training needs the [trl] extra")
    from progress_sql.training.tokenizer import train_tokenizer, training_texts

    return train_tokenizer(training_texts(dataset.train + dataset.real_train, CompactFormat()))
