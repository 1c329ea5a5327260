"""The run explorer without a browser: what a page holds, and the messages for folders it cannot read."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.errors import DatasetError
from progress_sql.runfolder import RunFolder
from progress_sql.types import PREVIEW_ROWS
from progress_sql.view import PAGE_FILE, read_run, render
from progress_sql.view.context import CONTEXT_FILE
from progress_sql.view.page import DETAIL_TYPE, unpack
from tests.cli.test_run_folders import _audit, _eval, _rollout

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
    assert all(c["gold"] is None and c["predicted"] is None for c in contexts)
    assert all(r["gold_result"]["status"] == "ok" and len(r["gold_result"]["rows"]) <= PREVIEW_ROWS for r in records)
    assert all(r["pred_result"] is not None for r in records if r["sql"])


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
    assert "is a reward-bound run; the page reads runs of eval, rollout, train, audit, ablate" in result.stderr


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
