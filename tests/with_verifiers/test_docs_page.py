"""docs/verifiers.md's commands run as written: every ``bash`` block, except one right below
``<!-- not run: ... -->``, in a folder laid out as the page assumes (``data/spider`` in Spider's layout),
with ``progress-sql`` the CLI of this checkout and the page's endpoint a scripted chat server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, build_database
from tests.with_verifiers.chat_server import MODEL, serving
from tests.with_verifiers.support import side_env, traces

PAGE = REPO_ROOT / "docs" / "verifiers.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_RUN = "<!-- not run:"
#: The page's endpoint and model, and what the test serves instead.
PAGE_URL = "http://localhost:8000/v1"
PAGE_MODEL = "Qwen/Qwen2.5-Coder-7B-Instruct"


def bash_blocks() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        if match.group(1) == "bash" and not before.startswith(NOT_RUN):
            blocks.append(match.group(2))
    return blocks


def spider_layout(folder: Path) -> dict[str, str]:
    """``data/spider`` as Spider ships it (dev.json, database/<db>/<db>.sqlite), with the test's music
    questions; returns each question's gold."""
    questions = json.loads((REPO_ROOT / "tests" / "fixtures" / "music_questions.json").read_text(encoding="utf-8"))
    spider = folder / "data" / "spider"
    build_database("music.sql", spider / "database")
    (spider / "dev.json").write_text(json.dumps(questions), encoding="utf-8")
    return {q["question"]: q["query"] for q in questions}


def test_the_page_has_its_commands() -> None:
    blocks = bash_blocks()
    assert len(blocks) == 2, blocks
    assert "progress-sql export --format trl" in blocks[0]
    assert "vf-eval progress-sql-verifiers" in blocks[0]
    assert all(PAGE_URL in b and PAGE_MODEL in b for b in blocks)


@pytest.mark.slow
def test_the_pages_commands_run(tmp_path: Path) -> None:
    golds = spider_layout(tmp_path)
    env = side_env(tmp_path)
    env["OPENAI_API_KEY"] = "unused"
    # the page's `progress-sql` is this checkout's CLI, run by this interpreter
    cli = f'progress-sql() {{ "{sys.executable}" -m progress_sql "$@"; }}\n'
    with serving(lambda question, replies, last: golds[question]) as chat:
        for block in bash_blocks():
            script = cli + "set -euo pipefail\n" + block.replace(PAGE_URL, chat.base_url).replace(PAGE_MODEL, MODEL)
            done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=600, check=False)  # fmt: skip
            assert done.returncode == 0, (block, done.stdout[-2000:], done.stderr[-4000:])
    rows = (tmp_path / "data" / "verifiers" / "dev.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == len(golds)
    first = traces(tmp_path / "outputs" / "spider-dev")
    assert len(first) == 4 * 2  # -n 4 rows, -r 2 episodes each
    assert all(t["metrics"]["match"] == 1.0 and t["rewards"]["progress_reward"]["score"] > 0 for t in first)
    paper = traces(tmp_path / "outputs" / "paper")
    assert len(paper) == 2
    assert all(t["metrics"]["k_star"] == 1.0 for t in paper)
