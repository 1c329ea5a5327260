"""The `diagnose` and `demo` subcommands, driven through typer's runner."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from progress_sql.cli import app

runner = CliRunner()
GOLD = "SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id WHERE T1.year = 2014"


def test_diagnose_json_record() -> None:
    result = runner.invoke(app, ["diagnose", "--gold", GOLD, "--pred", "SELECT name FROM stadium", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert set(record) == {"status", "f_struct", "f_lex", "f", "tags", "features", "feedback", "reason"}
    assert record["status"] == "ok"
    assert record["tags"] == ["FROM_OR_JOIN_TABLE_MISMATCH", "JOIN_MISSING", "WHERE_MISSING"]
    assert 0 < record["f_struct"] < 1
    assert record["f"] == round((record["f_struct"] + record["f_lex"]) / 2, 6)
    assert "concert" not in record["feedback"]


def test_diagnose_terminal_output_lists_tags_and_feedback() -> None:
    result = runner.invoke(app, ["diagnose", "--gold", GOLD, "--pred", "SELECT name FROM stadium"])
    assert result.exit_code == 0, result.output
    assert "JOIN_MISSING" in result.output
    assert "F_struct" in result.output
    assert "feedback" in result.output


def test_diagnose_unparsable_prediction_is_data_not_an_error() -> None:
    result = runner.invoke(app, ["diagnose", "--gold", GOLD, "--pred", "SELEC nonsense (", "--json"])
    assert result.exit_code == 0
    record = json.loads(result.output)
    assert (record["status"], record["tags"], record["f_struct"]) == ("pred_unparsable", ["PARSE_ERROR"], 0.0)
    assert record["reason"]


def test_diagnose_with_schema(tmp_path: Path) -> None:
    db = tmp_path / "country.sqlite"
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE country (name TEXT, government TEXT)")
    connection.commit()
    connection.close()
    result = runner.invoke(
        app,
        [
            "diagnose",
            "--gold",
            "SELECT name FROM country WHERE government = 'Republic'",
            "--pred",
            'SELECT name FROM country WHERE government = "Republic"',
            "--schema",
            str(db),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["f_struct"] == 1.0


def test_missing_schema_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    result = runner.invoke(app, ["diagnose", "--gold", "SELECT 1", "--pred", "SELECT 1", "--schema", str(missing)])
    assert result.exit_code == 2
    assert "database file not found" in result.output
    assert "--schema" in result.output


def test_missing_required_option_fails_with_usage() -> None:
    result = runner.invoke(app, ["diagnose", "--pred", "SELECT 1"])
    assert result.exit_code != 0
    assert "--gold" in result.output


def test_help_texts() -> None:
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0
    assert "diagnose" in top.output
    assert "demo" in top.output
    sub = runner.invoke(app, ["diagnose", "--help"])
    assert sub.exit_code == 0
    for option in ("--gold", "--pred", "--schema", "--json"):
        assert option in sub.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("progress-sql ")


def test_demo_shows_the_case_study_with_rising_alignment() -> None:
    result = runner.invoke(app, ["demo", "--json"])
    assert result.exit_code == 0, result.output
    turns = json.loads(result.output)
    assert [turn["turn"] for turn in turns] == [1, 2, 3]
    assert turns[0]["f"] < turns[1]["f"] < turns[2]["f"]
    assert turns[2]["tags"] == []
    text = runner.invoke(app, ["demo"])
    assert text.exit_code == 0
    assert "alignment improvement" in text.output
