"""`progress-sql train --task` refuses training data on an evaluation database (the leakage guard)
before any model is loaded, naming the database and the evaluation task."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("task", "folder", "named"),
    [
        ("bird-dev", "bird", "superhero (129 examples of bird-dev) is a database of bird-dev"),
        ("spider-dev", "spider", "concert_singer (45 examples of spider-dev) is a database of spider-dev"),
    ],
)
def test_train_refuses_an_evaluation_database(shared_data: Path, tmp_path: Path, task: str, folder: str,
                                              named: str) -> None:  # fmt: skip
    pytest.importorskip("torch", reason="a --task run imports torch first")
    result = runner.invoke(app, ["train", "--model", str(tmp_path / "no-model"), "--task", task,
                                 "--data-dir", str(shared_data / folder), "--out", str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert named in message
    assert "--allow-eval-overlap" in message
    assert not (tmp_path / "run" / "config.json").exists()  # refused before the run started
