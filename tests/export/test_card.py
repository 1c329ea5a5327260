"""The dataset card `export` writes beside its files: huggingface_hub parses it back, and its fields say
the licence, the sources, the leakage guard's verdict and which file is which split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.export.card import CARD_MARKER, dataset_licence, size_category
from tests.conftest import build_database

hub = pytest.importorskip("huggingface_hub", reason="cards are read with huggingface_hub (the [export] extra)")
runner = CliRunner()


@pytest.fixture(scope="module")
def spider(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A registered Spider training task's layout (train_spider.json, database/) with the music database."""
    folder = tmp_path_factory.mktemp("spider")
    build_database("music.sql", folder / "database")
    questions = (Path(__file__).resolve().parents[1] / "fixtures" / "music_questions.json").read_text()
    (folder / "train_spider.json").write_text(questions)
    # Spider dev beside it, on another database: the leakage guard reads it and finds no overlap
    (folder / "dev.json").write_text(json.dumps([{"db_id": "concert_singer", "question": "q", "query": "SELECT 1"}]))
    return folder


def export(out: Path, *args: str) -> dict[str, object]:
    result = runner.invoke(app, ["export", "--format", "trl", "--out", str(out), "--filter", "none", "--json", *args])
    assert result.exit_code == 0, result.output
    manifest: dict[str, object] = json.loads(result.stdout)
    return manifest


def test_export_writes_a_dataset_card_the_hub_parses(spider: Path, tmp_path: Path) -> None:
    folder = tmp_path / "trl"
    manifest = export(folder / "train.jsonl", "--task", "spider-train", "--data-dir", str(spider))
    assert manifest["card"] == {"path": str(folder / "README.md"), "written": True}
    assert manifest["source"]["licences"] == {"spider-train": "cc-by-sa-4.0"}  # type: ignore[index]
    card = hub.DatasetCard.load(folder / "README.md")
    data = card.data.to_dict()
    assert data["license"] == "cc-by-sa-4.0"
    assert data["source_datasets"] == ["spider-train"]
    assert data["size_categories"] == ["n<1K"]
    assert data["configs"] == [{"config_name": "trl", "data_files": [{"split": "train", "path": "train.jsonl"}]}]
    assert data["progress_sql"]["leakage"] == {"train.jsonl": "clean"}
    assert "text-to-sql" in data["tags"]
    assert "| `train.jsonl` | trl | 6 | spider-train (6, cc-by-sa-4.0) | none (0 dropped) | clean |" in card.text
    assert "`train.jsonl`: clean (no training database is an evaluation database; 1 evaluation files read)" in card.text
    assert "CC BY-SA 4.0" in card.text

    # a second export into the folder (a validation file) joins the same card as its own split
    export(folder / "validation.jsonl", "--task", "spider-train", "--data-dir", str(spider))
    data = hub.DatasetCard.load(folder / "README.md").data.to_dict()
    assert data["configs"][0]["data_files"] == [
        {"split": "train", "path": "train.jsonl"},
        {"split": "validation", "path": "validation.jsonl"},
    ]


def test_a_readme_the_export_did_not_write_is_left_alone(spider: Path, tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# my notes\n")
    manifest = export(tmp_path / "train.jsonl", "--task", "spider-train", "--data-dir", str(spider))
    assert manifest["card"] == {
        "path": str(tmp_path / "README.md"),
        "written": False,
        "reason": "a README.md not written by an export is there",
    }
    assert (tmp_path / "README.md").read_text() == "# my notes\n"
    assert CARD_MARKER not in (tmp_path / "README.md").read_text()


def test_a_questions_file_given_by_path_has_an_unknown_licence_stated_as_such(spider: Path, tmp_path: Path) -> None:
    export(tmp_path / "train.jsonl", "--task", str(spider / "train_spider.json"), "--data-dir", str(spider))
    card = hub.DatasetCard.load(tmp_path / "README.md")
    assert card.data.license == "unknown"
    assert "progress-sql records no licence for train_spider: the licence is unknown here" in card.text


def test_licence_of_a_derived_dataset_and_size_categories() -> None:
    assert dataset_licence(["cc-by-sa-4.0", "cc-by-sa-4.0"]) == "cc-by-sa-4.0"
    assert dataset_licence(["cc-by-sa-4.0", "unknown"]) == ["cc-by-sa-4.0", "unknown"]
    assert dataset_licence(["apache-2.0", "mit"]) == ["apache-2.0", "mit"]
    assert dataset_licence([]) == "unknown"
    assert [size_category(n) for n in (0, 999, 1_000, 20_000, 2_500_000)] == [
        "n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "1M<n<10M",
    ]  # fmt: skip
