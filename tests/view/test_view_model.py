"""The run explorer without a browser: what a page holds, and the messages for folders it cannot read."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.data.context import CONTEXT_FILE, example_contexts
from progress_sql.data.tasks import load_task
from progress_sql.env.rollout import EpisodeRecord
from progress_sql.errors import DatasetError
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.runfolder import RunFolder
from progress_sql.types import PREVIEW_ROWS, ExecResult, ResultPreview, plain
from progress_sql.view import PAGE_FILE, read_run, render
from progress_sql.view.page import DETAIL_TYPE, unpack
from tests.cli.test_run_folders import _audit, _eval, _questions, _rollout, answer, fake_training  # noqa: F401

runner = CliRunner()


def page_data(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', html, re.S)
    assert match
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def page_details(html: str) -> list[Any]:
    """Every example view of the page, in order (the blocks unpacked)."""
    blocks = re.findall(rf'<script type="{re.escape(DETAIL_TYPE)}" id="details-\d+">(.*?)</script>', html, re.S)
    return [view for block in blocks for view in unpack(block)]


@pytest.fixture(scope="module")
def eval_run(music_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval") / "run"
    result = runner.invoke(app, _eval(music_dir, out))
    assert result.exit_code == 0, result.output
    return out


def test_eval_writes_the_page_and_its_contexts_by_default(eval_run: Path) -> None:
    page = eval_run / PAGE_FILE
    assert page.is_file()
    html = page.read_text(encoding="utf-8")
    assert "http://" not in html
    assert "https://" not in html
    data = page_data(html)
    records = RunFolder(eval_run).read_records()
    assert data["rows"]["ids"] == [f"#{r['index']}" for r in records]
    views = page_details(html)
    assert [view["record"]["index"] for view in views] == [r["index"] for r in records]
    # the results' first rows come from the records (eval runs nothing again for the page)
    assert all(view["record"]["gold_result"]["status"] == "ok" for view in views)
    assert all("gold" not in (view.get("context") or {}) for view in views)
    contexts = [json.loads(line) for line in (eval_run / CONTEXT_FILE).read_text().splitlines()]
    assert [c["index"] for c in contexts] == [r["index"] for r in records]
    assert all("gold" not in c and "predicted" not in c for c in contexts)
    assert all(r["gold_result"]["status"] == "ok" and len(r["gold_result"]["rows"]) <= PREVIEW_ROWS for r in records)
    assert all(r["pred_result"] is not None for r in records if r["sql"])


def test_rollout_records_keep_both_results_and_the_page_runs_no_query_again(
    music_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first rows of the gold's result and of the final SQL's come from the episode itself: the
    model's SQL runs once per answer (the page ran each final SQL again, and every gold in a second store)."""
    questions = _questions(music_dir)
    replay = tmp_path / "replay.jsonl"  # every other question: a wrong first answer, then the gold
    replay.write_text("".join(
        json.dumps({"key": q["question"],
                    "responses": [answer(q["query"])] if k % 2 else [answer("SELECT 1"), answer(q["query"])]}) + "\n"
        for k, q in enumerate(questions)
    ))  # fmt: skip
    batches: list[list[str]] = []  # the answers of each turn, as the episodes hand them to the store together
    run_answers = GoldStore.run_answers

    def recorded(
        self: GoldStore, given: Any, progress: Any = None, on_result: Any = None, meanwhile: Any = None
    ) -> list[ExecResult]:
        batches.append([sql for _, sql in given])
        return run_answers(self, given, progress, on_result, meanwhile)

    monkeypatch.setattr(GoldStore, "run_answers", recorded)
    jobs: list[ExecJob] = []  # every query the pool ran
    run_many = ExecutionPool.run_many
    monkeypatch.setattr(ExecutionPool, "run_many", lambda p, run, **kw: jobs.extend(run) or run_many(p, run, **kw))
    out = tmp_path / "run"
    task = str(music_dir / "questions.json")
    options = ["--backend", "replay", "--replay", str(replay), "--turns", "2", "--out", str(out), "--workers", "1"]
    result = runner.invoke(app, ["rollout", "--task", task, *options])
    assert result.exit_code == 0, result.output
    records = RunFolder(out).read_records()
    turns = [turn for record in records for turn in record["turns"]]
    assert len(turns) == len(questions) + (len(questions) + 1) // 2  # the wrong first answers took a second turn
    answers = [sql for batch in batches for sql in batch]
    assert answers == [turn["sql"] for turn in sorted(turns, key=lambda t: t["turn"])]  # each answer handed over once
    ran = Counter(sql for batch in batches for sql in set(batch))  # a turn's batch runs each distinct SQL once
    golds = Counter(job.sql for job in jobs) - ran  # the answers' jobs go through run_many too
    assert golds.total() == len(jobs) - ran.total()
    assert set(golds.values()) == {1}  # each gold query ran once (the page's second store ran them all again)
    with GoldStore(get_preset("spider")) as store:
        examples = load_task(str(music_dir / "questions.json"), None)
        for record in records:
            example = examples[record["index"]]
            gold = ResultPreview.of(store.prepare(example).results[0], PREVIEW_ROWS)
            final: ExecResult = store.run_pred(example, record["turns"][-1]["sql"])
            assert record["gold_result"] == json.loads(json.dumps(plain(gold))), record["index"]
            assert record["pred_result"] == json.loads(json.dumps(plain(ResultPreview.of(final, PREVIEW_ROWS))))
    contexts = [json.loads(line) for line in (out / CONTEXT_FILE).read_text().splitlines()]
    assert [c["index"] for c in contexts] == [r["index"] for r in records]
    assert all("gold" not in c and "predicted" not in c for c in contexts)
    views = page_details((out / PAGE_FILE).read_text(encoding="utf-8"))
    assert all(view["record"]["pred_result"]["status"] == "ok" for view in views)


def test_contexts_run_no_query_and_take_a_gold_problem_from_its_record(
    music_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``eval --ray`` builds on the driver beside the records the nodes judged: no gold runs there."""

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("a query ran for the page's contexts")

    monkeypatch.setattr(ExecutionPool, "run_many", refuse)
    examples = load_task(str(music_dir / "questions.json"), None)[:3]
    records = [EpisodeRecord(examples[0].index, examples[0].db_id, "ok"),
               EpisodeRecord(examples[1].index, examples[1].db_id, "gold_invalid", "gold failed: no such table: x"),
               EpisodeRecord(examples[2].index, examples[2].db_id, "skipped", "database not found")]  # fmt: skip
    with GoldStore(get_preset("spider")) as schemas:
        contexts = example_contexts(examples, {examples[0].index: "SELECT name FROM singer"}, records, schemas.schema)
    assert [c.problem for c in contexts] == [None, "gold failed: no such table: x", None]
    assert contexts[0].predicted_sql == "SELECT name FROM singer"
    assert "singer" in contexts[0].schema


def test_a_train_page_shows_the_kept_rl_step_and_the_last_steps_ex(
    tmp_path: Path,
    fake_training: None,  # noqa: F811
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", "--out", str(out), "--steps", "2"])
    assert result.exit_code == 0, result.output
    page = read_run(out)
    metrics = {m.label: m for m in page.metrics}
    assert metrics["held-out EX after RL"].value == 0.5
    assert metrics["held-out EX, last RL step"].value == 0.5
    assert metrics["held-out EX, last RL step"].n == 4
    table = next(t for t in page.tables if t["title"].startswith("RL checkpoint selection (progressive"))
    assert [(row["step"], row["validation EX"], row["kept"]) for row in table["rows"]] == [
        (0, 0.25, ""), (1, 0.5, "kept"), (2, 0.5, ""),
    ]  # fmt: skip
    assert "EX after RL is that of the kept weights (`progressive`): step 1 of 2" in (out / "report.md").read_text()


def test_no_view_writes_neither_page_nor_contexts(music_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, [*_rollout(music_dir, out), "--no-view"])
    assert result.exit_code == 0, result.output
    assert not (out / PAGE_FILE).exists()
    assert not (out / CONTEXT_FILE).exists()
    assert "page:" not in result.output


def test_json_output_stays_json(music_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, [*_rollout(music_dir, out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["command"] == "rollout"
    assert (out / PAGE_FILE).is_file()


def test_an_incomplete_folder_names_what_is_missing(eval_run: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    result = runner.invoke(app, ["view", str(broken)])
    assert result.exit_code == 2
    assert "summary.json is missing" in result.stderr
    (broken / "summary.json").write_text((eval_run / "summary.json").read_text())
    result = runner.invoke(app, ["view", str(broken)])
    assert result.exit_code == 2
    assert "samples.jsonl is missing" in result.stderr
    assert not (broken / PAGE_FILE).exists()
    result = runner.invoke(app, ["view", str(tmp_path / "nowhere")])
    assert "run folder not found" in result.stderr


def test_an_old_folder_names_what_it_lacks(eval_run: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.mkdir()
    summary = json.loads((eval_run / "summary.json").read_text())
    (old / "samples.jsonl").write_text((eval_run / "samples.jsonl").read_text())
    (old / "summary.json").write_text(json.dumps({k: v for k, v in summary.items() if k != "command"}))
    with pytest.raises(DatasetError, match="lacks command: the folder was written by an older progress-sql"):
        read_run(old)
    (old / "summary.json").write_text(json.dumps({k: v for k, v in summary.items() if k != "metrics"}))
    with pytest.raises(DatasetError, match="lacks metrics"):
        read_run(old)
    (old / "summary.json").write_text(json.dumps(summary))  # complete but without examples.jsonl: said on the page
    page = read_run(old)
    assert any("examples.jsonl is missing" in note for note in page.notes)
    assert all(item.detail["context"] is None for item in page.items)
    assert all(item.values["question"] is None for item in page.items)


def test_a_folder_of_another_command_is_refused_by_name(music_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "suite"
    result = runner.invoke(app, ["reward-bound", "--out", str(out), "--turns", "2"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["view", str(out)])
    assert result.exit_code == 2
    refusal = "is a reward-bound run; the page reads runs of eval, rollout, eval-turns, train, audit, ablate"
    assert refusal in result.stderr


def test_compare_needs_two_eval_runs(eval_run: Path, music_dir: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    assert runner.invoke(app, _audit(music_dir, audit)).exit_code == 0
    result = runner.invoke(app, ["view", str(eval_run), str(audit)])
    assert result.exit_code == 2
    assert "not an eval run folder" in result.stderr or "two runs are compared when both are eval runs" in result.stderr


def test_the_data_cannot_close_the_script_element(eval_run: Path) -> None:
    page = read_run(eval_run)
    hostile = page.items[0].detail["record"]
    assert isinstance(hostile, dict)
    hostile["sql"] = "SELECT '</script><script>alert(1)</script>' <!-- x"
    html = render(page)
    assert html.count("</script>") == 2 + html.count(f'<script type="{DETAIL_TYPE}"')  # the page's own elements
    assert page_details(html)[0]["record"]["sql"] == hostile["sql"]
