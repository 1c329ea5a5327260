"""NeMo Gym rows from every export format: the same task fields and request whatever the source, the
prompt as the request's input, and clear errors for rows that are none of ours."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.errors import ConfigError, DatasetError
from progress_sql.export.build import export_items, write_export
from progress_sql.export.formats import get_format, trl_example
from progress_sql.integrations.nemo_gym.rows import REQUEST_FIELD, convert, load_rows, nemo_gym_row
from progress_sql.types import Example
from tests.conftest import build_database


def test_every_export_format_converts_to_the_same_row(tmp_path: Path) -> None:
    db = build_database("music.sql", tmp_path / "database")
    example = Example(4, "Names of singers?", "music", str(db), "SELECT name FROM singer", difficulty="easy")
    converted = {}
    for name in ("trl", "skyrl", "verl"):
        exported = tmp_path / f"{name}.jsonl"
        write_export(export_items([("spider-train", example)]), get_format(name), exported)
        assert convert(exported, tmp_path / f"{name}.nemo_gym.jsonl") == 1
        (converted[name],) = load_rows(tmp_path / f"{name}.nemo_gym.jsonl")
    assert converted["trl"] == converted["skyrl"] == converted["verl"]
    row = converted["trl"]
    assert trl_example(row) == example
    assert [m["role"] for m in row[REQUEST_FIELD]["input"]] == ["system", "user"]
    assert "CREATE TABLE singer" in row[REQUEST_FIELD]["input"][1]["content"]
    assert nemo_gym_row(row) == row  # a NeMo Gym row converts to itself
    assert nemo_gym_row(row, agent="a")["agent_ref"] == {"type": "responses_api_agents", "name": "a"}


def test_rows_that_are_not_ours_fail_with_what_they_lack(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="none of progress-sql export's formats"):
        nemo_gym_row({"question": "q"})
    with pytest.raises(DatasetError, match="lacks db_path"):
        nemo_gym_row({"prompt": [{"role": "user", "content": "q"}], "gold_sql": "SELECT 1", "db_id": "d",
                      "question": "q", "index": 0})  # fmt: skip
    with pytest.raises(ConfigError, match="JSON Lines"):
        convert(tmp_path / "rows.jsonl", tmp_path / "out.parquet")
    (tmp_path / "bad.jsonl").write_text("[1]\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl: line 1: not a JSON object"):
        load_rows(tmp_path / "bad.jsonl")
