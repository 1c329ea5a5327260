"""`progress-sql reward-bound`: the curve, its JSON record and its plot."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from progress_sql.cli import app

runner = CliRunner()


def test_reward_bound_json_and_plot(tmp_path: Path) -> None:
    result = runner.invoke(app, ["reward-bound", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["bound"] == {"1": 2.9, "2": 2.5, "3": 2.0, "4": 1.75, "none": 1.5}
    assert record["strictly_falling"] is True
    assert json.loads((tmp_path / "reward_bound.json").read_text()) == record
    png = (tmp_path / "reward_bound.png").read_bytes()
    assert png.startswith(b"\x89PNG")


def test_reward_bound_terminal_output(tmp_path: Path) -> None:
    result = runner.invoke(app, ["reward-bound", "--out", str(tmp_path), "--turns", "3", "--no-align-penalty"])
    assert result.exit_code == 0, result.output
    assert "strictly falling as k* grows: yes" in result.output
    assert "3.000" in result.output  # k* = 1 without the align penalty: 0.5 + 0.5 + 2.0


def test_reward_bound_rejects_a_bad_turn_budget(tmp_path: Path) -> None:
    result = runner.invoke(app, ["reward-bound", "--out", str(tmp_path), "--turns", "0"])
    assert result.exit_code == 2
    assert "--turns must be at least 1" in result.output
