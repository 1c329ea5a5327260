"""The data side of the GPU recipes, for real, up to the point where a GPU is needed.

A Spider-layout folder (``train_spider.json`` over the two Spider databases the package ships,
``dev.json`` over another database, so the leakage guard has an evaluation task to refuse), and
``progress-sql train`` run through its real data stage (task loading, the leakage guard, model name
resolution, ``config.json``, the gold-audit filter) until the model is loaded: there, at the hub and
GPU boundary, :func:`train_until_model_load` stops it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.data.embedded import embedded_databases, real_questions
from progress_sql.training.recipe import TrainConfig
from tests.conftest import REPO_ROOT, build_database

runner = CliRunner()


def spider_layout(root: Path) -> Path:
    """``root`` in Spider's release layout: the package's real questions on concert_singer and pets_1
    as the training file, and the music fixture as the evaluation (dev) file."""
    for name, path in embedded_databases().items():
        (root / "database" / name).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, root / "database" / name / f"{name}.sqlite")
    rows = [{"db_id": e.db_id, "question": e.question, "query": e.gold_sql} for e in real_questions()]
    (root / "train_spider.json").write_text(json.dumps(rows), encoding="utf-8")
    build_database("music.sql", root / "database")
    dev = (REPO_ROOT / "tests" / "fixtures" / "music_questions.json").read_text(encoding="utf-8")
    (root / "dev.json").write_text(dev, encoding="utf-8")
    return root


def hub_cache_with(monkeypatch: pytest.MonkeyPatch, root: Path, model: str) -> None:
    """A local Hugging Face cache in which ``model``'s config is present (what ``hf download`` leaves),
    so ``resolve_model`` accepts the hub id as it would on a GPU machine."""
    import huggingface_hub.constants as constants

    snapshot = root / f"models--{model.replace('/', '--')}" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True, exist_ok=True)
    (snapshot / "config.json").write_text(json.dumps({"model_type": "qwen2"}), encoding="utf-8")
    (root / f"models--{model.replace('/', '--')}" / "refs").mkdir(exist_ok=True)
    (root / f"models--{model.replace('/', '--')}" / "refs" / "main").write_text("0" * 40, encoding="utf-8")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))


class ModelLoadReachedError(Exception):
    """Raised where the run would load the model's tokenizer and weights (the hub and the GPU)."""

    def __init__(self, resolved: str) -> None:
        super().__init__(f"model load: {resolved}")
        self.resolved = resolved


@dataclass(frozen=True)
class DataStage:
    """What a ``train`` run did before the model load: its config, exit code and output."""

    config: TrainConfig | None
    exit_code: int
    output: str
    exception: BaseException | None

    @property
    def reached_model_load(self) -> bool:
        return isinstance(self.exception, ModelLoadReachedError)


def train_until_model_load(arguments: list[str], monkeypatch: pytest.MonkeyPatch, hub: Path) -> DataStage:
    """``progress-sql ARGUMENTS`` (a ``train --model`` command) with the real ``run_pretrained``, its data
    stage included, stopped at the tokenizer load; the config it ran with is recorded on the way in."""
    import progress_sql.backends.hf as hf
    import progress_sql.training.recipe as recipe

    assert arguments[0] == "train", arguments
    model = arguments[arguments.index("--model") + 1]
    hub_cache_with(monkeypatch, hub, model)
    seen: list[TrainConfig] = []
    real = recipe.run_pretrained

    def recorded(config: TrainConfig, *rest: Any) -> Any:
        seen.append(config)
        return real(config, *rest)

    def stop(resolved: str) -> Any:
        raise ModelLoadReachedError(resolved)

    monkeypatch.setattr(recipe, "run_pretrained", recorded)
    monkeypatch.setattr(hf, "load_tokenizer", stop)
    result = runner.invoke(app, arguments)
    return DataStage(seen[0] if seen else None, result.exit_code, result.output, result.exception)
