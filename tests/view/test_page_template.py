"""The page's template is filled in one pass (issue 36 item 6): a task, a question or an answer that
holds the template's own markers (``__JS__``, ``__DATA__``, ...) changes nothing but its own text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.view import PAGE_FILE
from progress_sql.view.page import ASSETS, DETAIL_TYPE, unpack

runner = CliRunner()
MARKERS = ("__TITLE__", "__CSS__", "__JS__", "__DATA__", "__DETAILS__")


@pytest.mark.parametrize("name", ["q__JS__", "q__DATA__", "q__TITLE____CSS____DETAILS__"])
def test_a_task_named_with_the_template_markers_renders(name: str, music_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "database").symlink_to(music_dir / "database")
    rows = json.loads((music_dir / "questions.json").read_text(encoding="utf-8"))
    rows[0]["question"] += " " + " ".join(MARKERS)
    task = tmp_path / f"{name}.json"
    task.write_text(json.dumps(rows), encoding="utf-8")
    predictions = tmp_path / "pred.txt"
    predictions.write_text("".join(f"{r['query']} -- {' '.join(MARKERS)}\n" for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--task", str(task), "--predictions", str(predictions), "--out", str(out),
                                 "--workers", "1", "--no-plots"])  # fmt: skip
    assert result.exit_code == 0, (result.output, result.exception)
    html = (out / PAGE_FILE).read_text(encoding="utf-8")
    script = (ASSETS / "page.js").read_text(encoding="utf-8")
    assert html.count(script) == 1  # the page's script, once, where the template puts it
    assert html.count((ASSETS / "page.css").read_text(encoding="utf-8")) == 1
    assert html.index(script) > html.index('id="run-data"')  # after the data, as page.html orders them
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    assert title is not None
    assert title.group(1) == f"Evaluation: {task}"
    data = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', html, re.S)
    assert data is not None
    assert json.loads(data.group(1))["title"] == f"Evaluation: {task}"
    blocks = re.findall(rf'<script type="{re.escape(DETAIL_TYPE)}" id="details-\d+">(.*?)</script>', html, re.S)
    views = [view for block in blocks for view in unpack(block)]
    assert views[0]["context"]["question"] == rows[0]["question"]
    assert [view["record"]["sql"] for view in views] == [f"{r['query']} -- {' '.join(MARKERS)}" for r in rows]
