"""Hostile input to the commands (issue 36 items 4, 5 and 6): every input that is not what it should be
ends in one ``error:`` line and exit 2 with nothing written that a later run reads as valid; every
string a model or a task file holds (U+2028, U+2029, U+0085, a lone surrogate) round-trips through
``eval``, ``view``, ``compare-runs`` and ``inspect``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from progress_sql import jsonio
from progress_sql.cli import app
from progress_sql.data.context import CONTEXT_FILE
from progress_sql.runfolder import RunFolder
from progress_sql.view import PAGE_FILE
from progress_sql.view.page import DETAIL_TYPE, unpack

runner = CliRunner()

#: What str.splitlines takes for a line end besides "\n" and "\r", and a lone surrogate.
HOSTILE = "\u2028|\u2029|\x85|\ud800"


def _questions(music_dir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((music_dir / "questions.json").read_text(encoding="utf-8"))
    return rows


def one_line_error(result: Result) -> str:
    """The command's only stderr line (``error: ...``), after exit 2 and no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().split("\n")
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), result.stderr
    return lines[0]


def _eval(task: Path, predictions: Path, out: Path, *more: str) -> Result:
    return runner.invoke(app, ["eval", "--task", str(task), "--predictions", str(predictions), "--out", str(out),
                               "--workers", "1", "--no-plots", *more])  # fmt: skip


# ---- the bad-input table --------------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
HUGE_INT = "1" * 5_001


def _prediction_files(music_dir: Path) -> dict[str, tuple[bytes, str]]:
    """name -> (the predictions file's bytes, what the one error line says)."""
    gold = [q["query"] for q in _questions(music_dir)]
    lines = [json.dumps({"sql": sql}) for sql in gold]
    return {
        "json nested 100,000 deep": (DEEP.encode(), "line 1: not readable JSON: nested too deeply"),
        "jsonl line nested 100,000 deep": (
            "\n".join([*lines[:-1], '{"sql": ' + DEEP + "}"]).encode(),
            f"line {len(gold)}: not readable JSON: nested too deeply",
        ),
        "json list with a 5,001-digit integer": (
            f"[{HUGE_INT}]".encode(),
            "line 1: not readable JSON: Exceeds the limit (4300 digits)",
        ),
        "jsonl index of 5,001 digits": (
            "\n".join([lines[0], f'{{"index": {HUGE_INT}, "sql": "SELECT 1"}}', *lines[2:]]).encode(),
            "line 2: not readable JSON: Exceeds the limit (4300 digits)",
        ),
        "a surrogate as UTF-8 bytes": (
            "\n".join(lines).encode().replace(b"SELECT", b"SELECT '\xed\xa0\x80',", 1),
            "line 1: not UTF-8 text (byte 0xed)",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "json nested 100,000 deep",
        "jsonl line nested 100,000 deep",
        "json list with a 5,001-digit integer",
        "jsonl index of 5,001 digits",
        "a surrogate as UTF-8 bytes",
    ],
)
def test_a_bad_prediction_file_is_one_line_and_exit_2_before_anything_is_written(
    case: str, music_dir: Path, tmp_path: Path
) -> None:
    content, says = _prediction_files(music_dir)[case]
    predictions = tmp_path / ("pred.json" if content.startswith(b"[") else "pred.jsonl")
    predictions.write_bytes(content)
    out = tmp_path / "run"
    line = one_line_error(_eval(music_dir / "questions.json", predictions, out))
    assert f"{predictions}: {says}" in line
    assert not out.exists()  # refused while reading the inputs: no folder, no summary


@pytest.mark.parametrize(
    ("questions", "says"),
    [
        (DEEP, "line 1: not readable JSON: nested too deeply"),
        (
            f'[{{"db_id": "music", "question": "q", "query": "SELECT 1", "n": {HUGE_INT}}}]',
            "line 1: not readable JSON: Exceeds the limit (4300 digits)",
        ),
    ],
    ids=["nesting", "integer"],
)
def test_a_bad_task_file_is_one_line_and_exit_2(questions: str, says: str, music_dir: Path, tmp_path: Path) -> None:
    task = tmp_path / "questions.json"
    task.write_text(questions, encoding="utf-8")
    (tmp_path / "database").symlink_to(music_dir / "database")
    predictions = tmp_path / "pred.txt"
    predictions.write_text("SELECT 1\n", encoding="utf-8")
    out = tmp_path / "run"
    assert f"{task}: {says}" in one_line_error(_eval(task, predictions, out))
    assert not out.exists()


@pytest.fixture(scope="module")
def clean_run(music_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("clean")
    predictions = folder / "pred.txt"
    predictions.write_text("".join(q["query"] + "\n" for q in _questions(music_dir)), encoding="utf-8")
    result = _eval(music_dir / "questions.json", predictions, folder / "run")
    assert result.exit_code == 0, result.output
    return folder / "run"


@pytest.mark.parametrize(
    ("command", "says"),
    [(lambda run, other, out: ["view", str(run)], "not readable JSON: nested too deeply"),
     (lambda run, other, out: ["compare-runs", str(other), str(run)], "not readable JSON: nested too deeply"),
     (lambda run, other, out: ["inspect", str(run), "--out", str(out)], "not readable JSON: nested too deeply")],
    ids=["view", "compare-runs", "inspect"],
)  # fmt: skip
def test_a_damaged_run_folder_is_one_line_and_exit_2(
    command: Callable[[Path, Path, Path], list[str]], says: str, clean_run: Path, tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for item in clean_run.iterdir():
        (damaged / item.name).write_bytes(item.read_bytes())
    with (damaged / "samples.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"index": ' + DEEP + "}\n")
    out = tmp_path / "inspected"
    line = one_line_error(runner.invoke(app, command(damaged, clean_run, out)))
    assert re.search(rf"samples\.jsonl: line \d+: {says}", line), line
    assert not (out / "summary.json").exists()


@pytest.mark.parametrize(
    ("command", "says"),
    [(lambda task, bad, out: ["rollout", "--task", str(task), "--backend", "replay", "--replay", str(bad), "--out",
                              str(out), "--workers", "1"], "line 1: not readable JSON: nested too deeply"),
     (lambda task, bad, out: ["export", "--format", "trl", "--mix", str(bad), "--out", str(out / "rows.jsonl"),
                              "--workers", "1"], "line 1: not readable JSON: nested too deeply")],
    ids=["rollout --replay", "export --mix"],
)  # fmt: skip
def test_other_inputs_go_through_the_same_reader(
    command: Callable[[Path, Path, Path], list[str]], says: str, music_dir: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "input.json"
    bad.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    out = tmp_path / "run"
    line = one_line_error(runner.invoke(app, command(music_dir / "questions.json", bad, out)))
    assert f"{bad}: {says}" in line
    assert not (out / "summary.json").exists()


def test_eval_checks_out_before_the_work(music_dir: Path, tmp_path: Path) -> None:
    """A bad --out fails at once: here before the backend, which no server answers, is ever asked."""
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    result = runner.invoke(app, ["eval", "--task", str(music_dir / "questions.json"), "--backend", "openai",
                                 "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out",
                                 str(blocker / "run"), "--workers", "1"])  # fmt: skip
    assert f"cannot write results to {blocker / 'run'}" in one_line_error(result)


# ---- strings that round-trip ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile_task(music_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[str]]:
    """The music task with every question ending in :data:`HOSTILE`, and predictions holding it: two
    matching answers with the separators in a comment, one with a lone surrogate (refused, not run)."""
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "database").symlink_to(music_dir / "database")
    rows = [{**q, "question": q["question"] + HOSTILE} for q in _questions(music_dir)]
    (folder / "questions.json").write_text(json.dumps(rows), encoding="utf-8")  # surrogates as escapes
    sql = [q["query"] for q in rows]
    sql[0] += " -- \u2028 \u2029 \x85"
    sql[1] += " /* \u2028\x85 */"
    sql[2] = "SELECT '\ud800'"
    (folder / "pred.jsonl").write_text("".join(json.dumps({"sql": s}) + "\n" for s in sql), encoding="utf-8")
    return folder, [r["question"] for r in rows], sql


@pytest.fixture(scope="module")
def hostile_run(hostile_task: tuple[Path, list[str], list[str]]) -> Path:
    folder, _, _ = hostile_task
    result = _eval(folder / "questions.json", folder / "pred.jsonl", folder / "run")
    assert result.exit_code == 0, (result.output, result.exception)
    return folder / "run"


def test_eval_keeps_every_string_it_read(hostile_run: Path, hostile_task: tuple[Path, list[str], list[str]]) -> None:
    _, questions, sql = hostile_task
    records = RunFolder(hostile_run).read_records()
    assert [r["sql"] for r in records] == sql
    assert [r["match"] for r in records[:3]] == [True, True, False]
    assert records[2]["verdict"] == "pred_error"
    assert "surrogate" in records[2]["pred_result"]["error"]  # refused by the binding, as data
    contexts = jsonio.read_json_lines(hostile_run / CONTEXT_FILE)
    assert [c["question"] for c in contexts] == questions
    for name in ("samples.jsonl", CONTEXT_FILE):  # even a reader that splits on every line end reads it
        text = (hostile_run / name).read_text(encoding="utf-8")
        assert [json.loads(line) for line in text.splitlines()] == jsonio.parse_lines(text, name)


def _page(folder: Path, name: str = PAGE_FILE) -> tuple[dict[str, Any], list[Any]]:
    html = (folder / name).read_text(encoding="utf-8")
    match = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', html, re.S)
    assert match
    blocks = re.findall(rf'<script type="{re.escape(DETAIL_TYPE)}" id="details-\d+">(.*?)</script>', html, re.S)
    return json.loads(match.group(1)), [view for block in blocks for view in unpack(block)]


def test_view_shows_every_string_as_it_was(
    hostile_run: Path, clean_run: Path, hostile_task: tuple[Path, list[str], list[str]]
) -> None:
    _, questions, sql = hostile_task
    result = runner.invoke(app, ["view", str(hostile_run)])
    assert result.exit_code == 0, (result.output, result.exception)
    data, views = _page(hostile_run)
    assert [view["record"]["sql"] for view in views] == sql
    assert [view["context"]["question"] for view in views] == questions
    assert data["rows"]["count"] == len(sql)
    result = runner.invoke(app, ["view", str(clean_run), str(hostile_run)])
    assert result.exit_code == 0, (result.output, result.exception)


def test_compare_runs_prints_every_string(hostile_run: Path, clean_run: Path) -> None:
    result = runner.invoke(app, ["compare-runs", str(clean_run), str(hostile_run), "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    (changed,) = json.loads(result.stdout)["changed"]
    assert changed["b"]["sql"] == "SELECT '\ud800'"
    result = runner.invoke(app, ["compare-runs", str(clean_run), str(hostile_run)])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "B pred_error: SELECT '\\ud800'" in result.stdout  # a terminal gets the escape


def test_inspect_reads_the_run_and_its_task_again(
    hostile_run: Path, hostile_task: tuple[Path, list[str], list[str]], tmp_path: Path
) -> None:
    _, _, sql = hostile_task
    out = tmp_path / "inspected"
    result = runner.invoke(app, ["inspect", str(hostile_run), "--out", str(out), "--workers", "1", "--sample", "2"])
    assert result.exit_code == 0, (result.output, result.exception)
    summary = RunFolder(out).read_summary()
    assert summary["matched"] == len(sql) - 1  # every answer but the refused one
    assert {r["matched_sql"] for r in RunFolder(out).read_records()} >= {sql[0], sql[1]}


# ---- DuckDB -------------------------------------------------------------------------------------------


def test_a_lone_surrogate_on_duckdb_is_an_error_value(
    hostile_task: tuple[Path, list[str], list[str]], tmp_path: Path
) -> None:
    pytest.importorskip("duckdb")
    folder, _, sql = hostile_task
    ported = runner.invoke(app, ["port-db", str(folder / "database"), "--to", f"duckdb:{tmp_path / 'duck'}",
                                 "--out", str(tmp_path / "port")])  # fmt: skip
    assert ported.exit_code == 0, ported.output
    out = tmp_path / "run"
    result = _eval(folder / "questions.json", folder / "pred.jsonl", out, "--backend-db", f"duckdb:{tmp_path / 'duck'}")
    assert result.exit_code == 0, (result.output, result.exception)
    records = RunFolder(out).read_records()
    assert [r["sql"] for r in records] == sql
    assert records[2]["verdict"] == "pred_error"
    assert "lone surrogate (U+D800)" in records[2]["pred_result"]["error"]
    assert records[0]["match"]  # the separators in its comment change nothing (record 1's "France" is
    # a column to DuckDB)
