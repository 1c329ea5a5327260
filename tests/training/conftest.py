"""Fixtures of the training tests: the default dataset over the embedded databases, a tokenizer
trained on it, a tiny model with a chat template and a Spider-format held-out folder (the real-model
run, training/pretrained.py), and torch pinned to one thread."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.embedded import embedded_databases, real_questions
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


@pytest.fixture(scope="session")
def tiny_chat_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.tiny_lm import tiny_model, tiny_tokenizer

    corpus = ["system: You write SQLite queries. user: Question: how many singers? assistant: <sql>SELECT count(*) "
              "FROM singer</sql> Feedback: your previous SQL has structural issues: WHERE_MISSING. Revise"]  # fmt: skip
    tokenizer = tiny_tokenizer(corpus)
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    folder = tmp_path_factory.mktemp("tiny-chat")
    tiny_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def heldout_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Spider-format folder of real dev questions over the embedded concert_singer database."""
    root = tmp_path_factory.mktemp("heldout")
    (root / "database" / "concert_singer").mkdir(parents=True)
    shutil.copy(embedded_databases()["concert_singer"], root / "database" / "concert_singer" / "concert_singer.sqlite")
    rows = [{"db_id": e.db_id, "question": e.question, "query": e.gold_sql}
            for e in real_questions() if e.db_id == "concert_singer"][:6]  # fmt: skip
    (root / "questions.json").write_text(json.dumps(rows), encoding="utf-8")
    return root
