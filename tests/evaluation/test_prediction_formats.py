"""Prediction file formats: each fixture format is detected, recorded and scored like the plain file;
bad input (binary, too few or too many entries, an unknown format, a db_id mismatch) is refused with
the file and line, exit code 2 and no summary.json; the five published systems' files rewritten into
every format score identically (../shared/data)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.evaluation.predictions import FORMATS, read_predictions, write_predictions
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.types import Example
from tests.conftest import REPO_ROOT
from tests.evaluation.test_eval_command import PREDICTIONS, QUESTIONS, run_eval, samples_of, shop  # noqa: F401

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "predictions"
DB_IDS = [q["db_id"] for q in QUESTIONS]
FIXTURE_FORMATS = {
    "shop.txt": "lines",
    "shop.tsv": "tsv",
    "shop_bird.json": "bird-json",
    "shop_list.json": "json-list",
    "shop.jsonl": "jsonl",
}
runner = CliRunner()


def test_there_is_a_fixture_for_every_format() -> None:
    assert sorted(FIXTURE_FORMATS.values()) == sorted(FORMATS)


@pytest.mark.parametrize(("name", "expected"), FIXTURE_FORMATS.items())
def test_each_format_is_detected_and_read_in_dataset_order(name: str, expected: str) -> None:
    read = read_predictions(FIXTURES / name, DB_IDS)
    assert read.format == expected
    assert read.first_samples() == PREDICTIONS
    assert [e.line for e in read.entries] == (list(range(2, 9)) if expected in ("bird-json", "json-list") else
                                              list(range(1, 8)))  # fmt: skip
    with_db_id = expected in ("tsv", "bird-json", "jsonl")
    assert [e.db_id for e in read.entries] == (DB_IDS if with_db_id else [None] * 7)


def test_every_format_scores_like_the_plain_file_and_is_recorded(shop: Path, tmp_path: Path) -> None:  # noqa: F811
    verdicts = {}
    for name, expected in FIXTURE_FORMATS.items():
        out = tmp_path / name
        summary = run_eval(shop, out, "--predictions", str(FIXTURES / name), "--no-plots")
        assert summary["settings"]["predictions_format"] == expected
        verdicts[name] = [(s["verdict"], s["match"], s["sql"]) for s in samples_of(out)]
    assert all(v == verdicts["shop.txt"] for v in verdicts.values())
    assert [match for _, match, _ in verdicts["shop.txt"]] == [True, True, True, False, True, False, False]


BAD_INPUT = {
    "bad_binary.bin": r"bad_binary\.bin: line 2: a NUL byte: this is a binary file",
    "bad_short.txt": r"bad_short\.txt: 5 entries \(the last at line 5\) for 7 examples: example 5 and later",
    "bad_long.txt": r"bad_long\.txt: line 8: entry 8, but the task has 7 examples",
    "bad_unknown.json": r"bad_unknown\.json: line 1: unknown prediction format",
    "bad_db_id.tsv": r"bad_db_id\.tsv: 1 db_id mismatches: line 4: db_id 'concert_singer', but example 3 is on 'shop'",
}


@pytest.mark.parametrize(("name", "message"), BAD_INPUT.items())
def test_bad_input_is_refused_with_file_line_and_exit_code_2(
    shop: Path,  # noqa: F811
    tmp_path: Path,
    name: str,
    message: str,
) -> None:
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["eval", "--task", str(shop / "questions.json"), "--predictions", str(FIXTURES / name), "--out", str(out)]
    )
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "error:" in result.output
    text = " ".join(result.output.split())  # rich wraps long messages
    with pytest.raises(DatasetError, match=message):
        read_predictions(FIXTURES / name, DB_IDS)
    assert str(FIXTURES / name).split("/")[-1] in text
    assert not (out / "summary.json").exists()  # nothing ran, nothing claims it did
    assert not (out / "samples.jsonl").exists()


def test_format_names_are_checked_and_override_detection(shop: Path, tmp_path: Path) -> None:  # noqa: F811
    with pytest.raises(ConfigError, match="unknown prediction format 'csv'; choose one of bird-json"):
        read_predictions(FIXTURES / "shop.txt", 7, "csv")
    result = runner.invoke(
        app, ["eval", "--task", str(shop / "questions.json"), "--predictions", str(FIXTURES / "shop.txt"),
              "--format", "csv", "--out", str(tmp_path / "x")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "unknown prediction format 'csv'" in result.output
    # Read as plain lines, a tsv file keeps the text before the tab and its db_ids go unchecked.
    lines = read_predictions(FIXTURES / "bad_db_id.tsv", DB_IDS, "lines")
    assert (lines.format, lines.first_samples()) == ("lines", PREDICTIONS)
    summary = run_eval(
        shop, tmp_path / "out", "--predictions", str(FIXTURES / "bad_db_id.tsv"), "--format", "lines", "--no-plots"
    )
    assert summary["settings"]["predictions_format"] == "lines"


def test_bird_json_keys_are_indices_gaps_and_repeats_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "pred.json"
    path.write_text('{\n"1": "SELECT 2\\t----- bird -----\\tb",\n"0": "SELECT 1",\n"2": null\n}\n')
    read = read_predictions(path, ["a", "b", "c"])
    assert read.format == "bird-json"
    assert read.sample_lists() == [["SELECT 1"], ["SELECT 2"], [""]]
    assert [e.db_id for e in read.entries] == [None, "b", None]
    path.write_text('{\n"0": "SELECT 1",\n"0": "SELECT 2"\n}\n')
    with pytest.raises(DatasetError, match=r"pred\.json: line 3: index 0 again \(first at line 2\)"):
        read_predictions(path, 2)
    path.write_text('{\n"0": "SELECT 1",\n"2": "SELECT 2"\n}\n')
    with pytest.raises(DatasetError, match=r"line 3: index 2 is outside the task's examples 0\.\.1"):
        read_predictions(path, 2)
    path.write_text('{\n"0": "SELECT 1"\n}\n')
    with pytest.raises(DatasetError, match="1 entry for 2 examples: no entry for index 1"):
        read_predictions(path, 2)
    path.write_text('{\n"0": "SELECT 1",\n"1": "SELECT 2",\n}\n')
    with pytest.raises(DatasetError, match=r"pred\.json: line 4: not valid JSON"):
        read_predictions(path, 2)


def test_json_lists_take_strings_sample_lists_null_and_records(tmp_path: Path) -> None:
    path = tmp_path / "pred.json"
    path.write_text(json.dumps(["SELECT 1", ["SELECT 2", "SELECT 3"], None, {"sql": "SELECT 4"}], indent=1))
    read = read_predictions(path, 4)
    assert read.sample_lists() == [["SELECT 1"], ["SELECT 2", "SELECT 3"], [""], ["SELECT 4"]]
    path.write_text(json.dumps(["SELECT 1", 7], indent=1))
    with pytest.raises(DatasetError, match="line 3: expected SQL"):
        read_predictions(path, 2)


def test_blank_lines_are_empty_answers_and_trailing_ones_past_the_end_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "pred.txt"
    path.write_text("SELECT 1\n\nSELECT 3\n\n\n")
    assert read_predictions(path, 3).first_samples() == ["SELECT 1", "", "SELECT 3"]
    assert read_predictions(path, 4).first_samples() == ["SELECT 1", "", "SELECT 3", ""]
    path.write_bytes(b"SELECT 1\r\nSELECT \xff\r\n")
    with pytest.raises(DatasetError, match=r"line 2: not UTF-8 text \(byte 0xff\)"):
        read_predictions(path, 2)


# --- the published systems' files, rewritten into every format (../shared/data) -----------------------

LIMITS = ExecLimits(timeout_s=5.0, drain_after_cap=True)


@pytest.mark.shared_data
@pytest.mark.slow
@pytest.mark.parametrize("model", [1, 2, 3, 4, 5])
def test_published_files_rewritten_into_every_format_get_the_same_verdicts(
    shared_data: Path,
    spider_dev: list[Example],
    pool: ExecutionPool,
    spider_gold_cache: GoldCache,
    tmp_path: Path,
    model: int,
) -> None:
    db_ids = [e.db_id for e in spider_dev]
    original = read_predictions(shared_data / "predictions" / "spider-dev" / f"model_{model}.txt", db_ids)
    assert original.format == "lines"
    store = GoldStore(get_preset("spider"), pool=pool, limits=LIMITS, cache=spider_gold_cache)
    files = {"original": original}
    for name in FORMATS:
        path = write_predictions(tmp_path / f"model.{name}", original.sample_lists(), db_ids, name)
        files[name] = read_predictions(path, db_ids)
        assert files[name].format == name
        assert files[name].sample_lists() == original.sample_lists(), name
    # Every file scored in one run (the task repeated once per file, with its own indices), so that a
    # query that times out waits once, not once per format.
    count = len(spider_dev)
    examples = [replace(e, index=k * count + e.index) for k in range(len(files)) for e in spider_dev]
    samples = [[Sample(sql) for sql in items] for read in files.values() for items in read.sample_lists()]
    records = evaluate(examples, samples, store)
    verdicts = {
        name: [(r.status, r.verdict, r.match, r.tags) for r in records[k * count : (k + 1) * count]]
        for k, name in enumerate(files)
    }
    assert sum(match for _, _, match, _ in verdicts["original"]) > 300  # real verdicts, not a run of errors
    for name in FORMATS:
        assert verdicts[name] == verdicts["original"], name
