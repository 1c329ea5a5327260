"""``progress-sql serve-env``: what it refuses before anything starts (the servers themselves are
tested in their standards' side environments: tests/with_openenv, tests/with_nemo_gym)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.cli.serve_env import SERVERS
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.integrations.hosted import load_rows, read_settings

runner = CliRunner()


def test_an_unknown_standard_and_a_missing_rows_file_fail_with_what_to_do(tmp_path: Path) -> None:
    result = runner.invoke(app, ["serve-env", "gymnasium", "--rows", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2
    assert "unknown standard 'gymnasium'; served: openenv, nemo-gym" in result.output
    result = runner.invoke(app, ["serve-env", "openenv", "--rows", str(tmp_path / "none.jsonl")])
    assert result.exit_code == 2
    assert "no file" in result.output
    assert "progress-sql export" in result.output


@pytest.mark.parametrize("standard", sorted(SERVERS))
def test_without_the_standards_package_the_extra_is_named(standard: str, tmp_path: Path) -> None:
    server = SERVERS[standard]
    if importlib.util.find_spec(server.package) is not None:
        pytest.skip(f"{server.package} is installed here; its server is tested in its own tests")
    rows = tmp_path / "rows.jsonl"
    rows.write_text("{}\n", encoding="utf-8")
    result = runner.invoke(app, ["serve-env", standard, "--rows", str(rows)])
    assert result.exit_code == 2
    assert f"pip install -e '.[{server.extra}]'" in result.output  # brackets printed, not read as markup


def test_settings_come_from_a_file_or_a_json_object(tmp_path: Path) -> None:
    as_yaml = tmp_path / "settings.yaml"
    as_yaml.write_text("timeout_s: 2\nprofile: paper\n", encoding="utf-8")
    assert read_settings(str(as_yaml)) == {"timeout_s": 2, "profile": "paper"}
    assert read_settings('{"max_turns": 3}') == {"max_turns": 3}
    with pytest.raises(ConfigError, match=r"neither a \.json/\.yaml file nor a JSON object"):
        read_settings("timeout_s=2")
    with pytest.raises(ConfigError, match="not a mapping"):
        read_settings("[1, 2]")
    with pytest.raises(ConfigError, match="no file"):
        read_settings(str(tmp_path / "missing.json"))


def test_rows_are_read_line_by_line_with_their_place_in_errors(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"a": "x\u2028y"}\n\n{"b": 2}\n', encoding="utf-8")
    assert load_rows(rows) == [{"a": "x\u2028y"}, {"b": 2}]  # a line separator inside a string is no new row
    rows.write_text('{"a": 1}\n[1]\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"rows.jsonl: line 2: not a JSON object"):
        load_rows(rows)
    rows.write_text("[" * 100_000 + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"rows.jsonl: line 1: not readable JSON: nested too deeply"):
        load_rows(rows)
    other = tmp_path / "rows.csv"
    other.write_text("a,b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"neither \.jsonl nor \.parquet"):
        load_rows(other)
