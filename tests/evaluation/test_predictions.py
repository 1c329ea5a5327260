"""Prediction files: JSON-lines errors name the line, in line order, for both loaders."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.errors import DatasetError
from progress_sql.evaluation.predictions import load_prediction_samples, load_predictions


def test_jsonl_records_and_sample_lists_load_in_dataset_order(tmp_path: Path) -> None:
    singles = tmp_path / "pred.jsonl"
    singles.write_text('{"index": 1, "sql": "SELECT 2"}\n\n{"index": 0, "pred": "SELECT 1"}\n')
    assert load_predictions(singles, 2) == ["SELECT 1", "SELECT 2"]
    assert load_prediction_samples(singles, 2) == [["SELECT 1"], ["SELECT 2"]]
    lists = tmp_path / "samples.jsonl"
    lists.write_text('{"index": 1, "samples": ["SELECT 2"]}\n{"index": 0, "samples": ["SELECT 1", "SELECT 3"]}\n')
    assert load_prediction_samples(lists, 2) == [["SELECT 1", "SELECT 3"], ["SELECT 2"]]


@pytest.mark.parametrize("loader", [load_predictions, load_prediction_samples])
def test_a_line_that_is_not_json_is_named(loader: object, tmp_path: Path) -> None:
    bad = tmp_path / "pred.jsonl"
    bad.write_text('{"index": 0, "sql": "SELECT 1"}\nnot json\n')
    with pytest.raises(DatasetError, match=r"pred\.jsonl: line 2: not valid JSON"):
        loader(bad, 2)  # type: ignore[operator]


def test_an_earlier_bad_record_is_reported_before_a_later_line_that_is_not_json(tmp_path: Path) -> None:
    bad = tmp_path / "samples.jsonl"
    bad.write_text('{"index": 0, "samples": []}\nnot json\n')
    with pytest.raises(DatasetError, match="line 1: 'samples' must be a non-empty list"):
        load_prediction_samples(bad, 2)


@pytest.mark.parametrize("loader", [load_predictions, load_prediction_samples])
def test_a_missing_file_is_a_dataset_error(loader: object, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="predictions file not found"):
        loader(tmp_path / "absent.jsonl", 1)  # type: ignore[operator]
