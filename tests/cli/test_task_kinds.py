"""The command line over write tasks and ambiguous questions (docs/tasks.md): ``eval`` on the embedded
sets and on a user's own mixed task file, ``rollout`` with scripted responses that ask, and ``export``
whose rows read back as the same examples; every report breaks results down by task kind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.backends.replay import question_key
from progress_sql.cli import app
from progress_sql.data.embedded import EMBEDDED_DIR, ambiguous_questions, real_questions, write_tasks
from progress_sql.data.loaders import load_spider
from progress_sql.data.taskfile import ambiguity_data, write_spec_data
from progress_sql.export.formats import get_format
from progress_sql.prompts import opening_messages
from progress_sql.types import Example

runner = CliRunner()
WRITE = write_tasks()[0]  # "Increase the age of every singer from France by one year."
AMBIGUOUS = next(e for e in ambiguous_questions() if e.difficulty == "order")  # oldest first
READ = real_questions()[0]


def invoke(*args: str) -> Any:
    result = runner.invoke(app, [*args, "--workers", "1"])
    assert result.exit_code == 0, result.output
    return result


def answer(sql: str) -> str:
    return f"<think>plan</think><sql>{sql}</sql>"


def entry(example: Example) -> dict[str, Any]:
    """The example as an entry of a user's own questions file (the documented format)."""
    item: dict[str, Any] = {"db_id": example.db_id, "question": example.question, "query": example.gold_sql}
    if example.write is not None:
        item["write"] = write_spec_data(example.write)
    if example.ambiguity:
        item["ambiguity"] = ambiguity_data(example.ambiguity)
    return item


@pytest.fixture(scope="module")
def own_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's folder in Spider's layout: one read, one write and one ambiguous entry over copies of
    the embedded databases."""
    folder = tmp_path_factory.mktemp("own_tasks")
    for db_id in ("concert_singer", "pets_1"):
        (folder / "database" / db_id).mkdir(parents=True)
        shutil.copy(EMBEDDED_DIR / db_id / f"{db_id}.sqlite", folder / "database" / db_id)
    path = folder / "my_tasks.json"
    path.write_text(json.dumps([entry(READ), entry(WRITE), entry(AMBIGUOUS)]), encoding="utf-8")
    return path


def predictions(path: Path, sqls: list[str]) -> Path:
    path.write_text("".join(json.dumps({"index": i, "sql": sql}) + "\n" for i, sql in enumerate(sqls)))
    return path


@pytest.mark.parametrize("task", ["embedded-write", "embedded-ambiguous"])
def test_eval_of_an_embedded_set_reports_its_kind(task: str, tmp_path: Path) -> None:
    examples = write_tasks() if task == "embedded-write" else ambiguous_questions()
    # Every other answer is the reference; the rest answer nothing useful.
    sqls = [e.gold_sql if i % 2 == 0 else "SELECT 1" for i, e in enumerate(examples)]
    out = tmp_path / "out"
    invoke("eval", "--task", task, "--predictions", str(predictions(tmp_path / "p.jsonl", sqls)),
           "--out", str(out), "--no-plots")  # fmt: skip
    kind = examples[0].kind
    summary = json.loads((out / "summary.json").read_text())
    by_kind = summary["metrics"]["by_kind"]
    assert list(by_kind) == [kind]
    assert (by_kind[kind]["scored"], by_kind[kind]["matched"]) == (len(examples), (len(examples) + 1) // 2)
    report = (out / "report.md").read_text()
    assert "## By task kind" in report
    assert f"| {kind} | {len(examples)} | {(len(examples) + 1) // 2} |" in report
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert {s["kind"] for s in samples} == {kind}


def test_eval_of_an_own_mixed_file_breaks_down_by_kind(own_file: Path, tmp_path: Path) -> None:
    wrong_write = "UPDATE singer SET Age = Age + 1"  # forgets the WHERE: the other singers' check fails
    sqls = [READ.gold_sql, wrong_write, AMBIGUOUS.gold_sql]
    out = tmp_path / "out"
    invoke("eval", "--task", str(own_file), "--predictions", str(predictions(tmp_path / "p.jsonl", sqls)),
           "--out", str(out), "--no-plots")  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    by_kind = summary["metrics"]["by_kind"]
    assert {kind: (block["scored"], block["matched"]) for kind, block in by_kind.items()} == {
        "read": (1, 1), "write": (1, 0), "ambiguous": (1, 1),
    }  # fmt: skip
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["kind"] for s in samples] == ["read", "write", "ambiguous"]
    assert "DML_WHERE_MISSING" in samples[1]["tags"]
    assert samples[1]["reason"] == "1 of 3 checks passed; failed: other singers unchanged, table singer"
    report = (out / "report.md").read_text()
    assert "| write | 1 | 0 | 0.00 |" in report


def test_rollout_of_an_own_mixed_file_asks_writes_and_breaks_down_by_kind(own_file: Path, tmp_path: Path) -> None:
    examples = load_spider(own_file, own_file.parent / "database")
    ask = "<think>which way?</think><ask>Should I sort from the oldest or the youngest?</ask>"
    scripts = {
        "read": [answer(READ.gold_sql)],
        "write": [answer("UPDATE singer SET Age = Age + 1"), answer(WRITE.gold_sql)],
        "ambiguous": [ask, answer(AMBIGUOUS.gold_sql)],
    }
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(
        json.dumps({"key": question_key(opening_messages(e, "")), "responses": scripts[e.kind]}) + "\n"
        for e in examples
    ))  # fmt: skip
    out = tmp_path / "out"
    result = invoke("rollout", "--task", str(own_file), "--backend", "replay", "--replay", str(replay),
                    "--turns", "3", "--offer-ask", "--out", str(out), "--json")  # fmt: skip
    summary = json.loads(result.stdout)
    assert summary["settings"]["task_terms"]["offer_ask"] is True
    by_kind = summary["metrics"]["by_kind"]
    assert list(by_kind) == ["read", "write", "ambiguous"]
    assert {kind: (block["match_rate"], block["asks"]) for kind, block in by_kind.items()} == {
        "read": (1.0, 0), "write": (1.0, 0), "ambiguous": (1.0, 1),
    }  # fmt: skip
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["kind"] for s in samples] == ["read", "write", "ambiguous"]
    write, ambiguous = samples[1], samples[2]
    assert [(t["checks_passed"], t["checks_total"]) for t in write["turns"]] == [(1, 3), (3, 3)]
    assert "checks" in write["reward"]["components"]
    assert [t["action"] for t in ambiguous["turns"]] == ["ask", "sql"]
    assert ambiguous["turns"][0]["slot"] == AMBIGUOUS.ambiguity[0].name
    assert AMBIGUOUS.ambiguity[0].interpretation in ambiguous["turns"][0]["feedback"]
    assert ambiguous["reward"]["components"]["ask"] == 0.5
    report = (out / "report.md").read_text()
    assert "by_kind.ambiguous.asks" in report


@pytest.mark.parametrize("fmt", ["verl", "skyrl", "trl"])
def test_export_rows_carry_the_task_and_read_back_as_the_same_examples(fmt: str, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow.parquet", reason="parquet export needs the [export] extra")
    rows: list[dict[str, Any]] = []
    expected: list[Example] = []
    for task in ("embedded-write", "embedded-ambiguous"):
        out = tmp_path / f"{task}.{'jsonl' if fmt == 'trl' else 'parquet'}"
        invoke("export", "--format", fmt, "--task", task, "--out", str(out), "--offer-ask", "--filter", "none")
        manifest = json.loads(out.with_name(f"{out.stem}.manifest.json").read_text())
        assert manifest["dropped"] == 0
        rows += _read(out)
        expected += write_tasks() if task == "embedded-write" else ambiguous_questions()
    assert len(rows) == len(expected)
    reader = get_format(fmt).example
    assert [reader(row) for row in rows] == expected
    spec = json.loads(rows[0]["task_spec"] if fmt == "trl" else rows[0]["extra_info"]["task_spec"])
    assert spec["write"]["tables"] == list(WRITE.write.tables)  # type: ignore[union-attr]  # a write task
    prompt = rows[0]["prompt"]
    assert "<ask>" in prompt[0]["content"]  # --offer-ask: the action is in the system prompt
    assert "Task: change the database" in prompt[1]["content"]


def test_export_filter_keeps_write_tasks_whose_reference_passes(tmp_path: Path) -> None:
    """The gold audit reads queries: a write task is kept by its reference passing its own checks."""
    out = tmp_path / "w.jsonl"
    invoke("export", "--format", "trl", "--task", "embedded-write", "--out", str(out))
    assert len(_read(out)) == len(write_tasks())
    assert json.loads((tmp_path / "w.manifest.json").read_text())["dropped"] == 0


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    import pyarrow.parquet as pq

    return list(pq.read_table(path).to_pylist())
