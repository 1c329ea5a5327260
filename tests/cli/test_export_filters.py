"""`progress-sql export --filter`: the gold-audit data filters (progress_sql.audit.filters, the
implementation `train` uses) wired into export; ``rl-default`` unless ``--filter`` says otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.audit.filters import FILTER_SETS
from progress_sql.cli import app
from tests.conftest import build_database

runner = CliRunner()
BROKEN_GOLD = "SELECT name FROM no_such_table"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Music questions, one whose gold fails, one on an absent database."""
    build_database("music.sql", tmp_path / "database")
    questions = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "music_questions.json").read_text())
    questions.append({"db_id": "music", "question": "Broken gold?", "query": BROKEN_GOLD})
    questions.append({"db_id": "absent", "question": "Unverifiable?", "query": "SELECT 1"})
    (tmp_path / "questions.json").write_text(json.dumps(questions))
    return tmp_path


def export(data: Path, out: Path, *extra: str) -> Any:
    return runner.invoke(
        app,
        ["export", "--format", "trl", "--task", str(data / "questions.json"), "--data-dir", str(data),
         "--out", str(out), "--workers", "1", *extra],
    )  # fmt: skip


def test_filter_none_keeps_every_example(data: Path, tmp_path: Path) -> None:
    result = export(data, tmp_path / "all.jsonl", "--filter", "none")
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 8
    assert BROKEN_GOLD in (tmp_path / "all.jsonl").read_text()
    assert not (tmp_path / "all.dropped.jsonl").exists()


def test_rl_default_drops_a_failing_gold_and_writes_it_beside_the_output(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "kept.jsonl"
    result = export(data, out, "--timeout", "5")  # rl-default is the default
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    manifest = json.loads((tmp_path / "kept.manifest.json").read_text())
    dropped = (tmp_path / "kept.dropped.jsonl").read_text().splitlines()
    assert manifest["filter"] == "rl-default"
    assert manifest["dropped"] == len(dropped) >= 1
    assert manifest["dropped_file"] == str(tmp_path / "kept.dropped.jsonl")
    assert manifest["rows"] == len(rows) == 8 - len(dropped)
    assert BROKEN_GOLD not in {r["gold_sql"] for r in rows}
    assert any("no_such_table" in line for line in dropped)
    assert [r["verified"] for r in rows if r["db_id"] == "absent"] == [False]  # unverifiable rows pass through


def test_unknown_filter_lists_the_filter_sets(data: Path, tmp_path: Path) -> None:
    result = export(data, tmp_path / "x.jsonl", "--filter", "loose")
    assert result.exit_code == 2
    assert all(name in result.stderr for name in FILTER_SETS)
