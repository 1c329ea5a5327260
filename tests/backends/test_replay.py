"""Replay of scripted responses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from progress_sql.backends.base import GenerationConfig
from progress_sql.backends.replay import ReplayBackend
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.prompts import initial_messages


def test_replays_in_order_and_repeats_the_last(tmp_path: Path) -> None:
    conversation = initial_messages("", "how many?")
    script = tmp_path / "script.jsonl"
    key = "how many?"
    script.write_text(json.dumps({"key": key, "responses": ["a", "b"]}) + "\n\n", encoding="utf-8")
    backend = ReplayBackend.from_file(script)
    assert backend.generate([conversation], GenerationConfig()) == [["a"]]
    assert backend.generate([conversation], GenerationConfig(n=2)) == [["b", "b"]]
    assert backend.generate([initial_messages("", "unknown")], GenerationConfig()) == [[""]]


def test_malformed_script_names_the_line(tmp_path: Path) -> None:
    script = tmp_path / "bad.jsonl"
    script.write_text('{"key": "x", "responses": ["a"]}\n{"responses": []}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.jsonl:2"):
        ReplayBackend.from_file(script)


def test_generation_config_validation() -> None:
    with pytest.raises(ConfigError, match="n must be"):
        GenerationConfig(n=0)
