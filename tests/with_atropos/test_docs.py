"""docs/atropos.md's commands, run as a user would: every bash block (except one right below a
``<!-- not run: ... -->`` line) in a folder holding a Spider-layout data folder and the files of the
page's ``<!-- file: NAME -->`` blocks, with the test's tokenizer and scripted server in place of the
user's model and inference server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, build_database
from tests.with_atropos.conftest import MODEL, ScriptedChat, read_groups, side_env

PAGE = REPO_ROOT / "docs" / "atropos.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
USER_MODEL = "Qwen/Qwen2.5-Coder-7B-Instruct"
USER_SERVER = "http://localhost:9001/v1"


def blocks() -> list[tuple[str, str, str]]:
    """(language, the comment line right above, code) of every fenced block of the page."""
    text = PAGE.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        above = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        found.append((match.group(1), above, match.group(2)))
    return found


def localised(code: str, chat: ScriptedChat, tokenizer_dir: Path) -> str:
    """The page's text with the test's tokenizer, model, server and Python in place of the user's (the
    page's commands start their lines: ``progress-sql ...`` and ``python -m ...``)."""
    code = (
        code.replace(f"tokenizer_name: {USER_MODEL}", f"tokenizer_name: {tokenizer_dir}")
        .replace(f"model_name: {USER_MODEL}", f"model_name: {MODEL}")
        .replace(USER_SERVER, chat.base_url)
    )
    code = re.sub(r"(?m)^progress-sql ", f"{sys.executable} -m progress_sql ", code)
    return re.sub(r"(?m)^python -m ", f"{sys.executable} -m ", code)


def test_the_page_has_what_the_test_runs() -> None:
    found = blocks()
    assert [above for _, above, _ in found if above.startswith("<!-- file:")] == ["<!-- file: atropos.yaml -->"]
    run = [code for language, above, code in found if language == "bash" and not above.startswith("<!-- not run")]
    assert len(run) == 1
    assert "process" in run[0]
    assert "evaluate" in run[0]


def test_the_pages_commands_export_process_and_evaluate(
    tmp_path: Path, chat: ScriptedChat, tokenizer_dir: Path
) -> None:
    # Spider's layout: train on music, dev on a database of another schema (the leakage guard's rule).
    spider = tmp_path / "data" / "spider"
    build_database("music.sql", spider / "database")
    build_database("shop.sql", spider / "database")
    questions = json.loads((REPO_ROOT / "tests" / "fixtures" / "music_questions.json").read_text(encoding="utf-8"))
    dev = [{"db_id": "shop", "question": "How many items are there?", "query": "SELECT count(*) FROM item",
            "hardness": "easy"},
           {"db_id": "shop", "question": "Which items cost more than 5?",
            "query": "SELECT name FROM item WHERE price > 5", "hardness": "easy"}]  # fmt: skip
    (spider / "train_spider.json").write_text(json.dumps(questions), encoding="utf-8")
    (spider / "dev.json").write_text(json.dumps(dev), encoding="utf-8")
    script = {q["question"]: [[f"<sql>{q['query']}</sql>"], ["<sql>SELECT 1</sql>", f"<sql>{q['query']}</sql>"]]
              for q in questions + dev}  # fmt: skip
    chat.reset(script)

    for language, above, code in blocks():
        if above.startswith("<!-- file:"):
            name = above.removeprefix("<!-- file:").removesuffix("-->").strip()
            (tmp_path / name).write_text(localised(code, chat, tokenizer_dir), encoding="utf-8")
        elif language == "bash" and not above.startswith("<!-- not run"):
            run = subprocess.run(["bash", "-euo", "pipefail", "-c", localised(code, chat, tokenizer_dir)],
                                 cwd=tmp_path, env=side_env(), capture_output=True, text=True, timeout=600,
                                 check=False)  # fmt: skip
            assert run.returncode == 0, run.stderr[-4000:]

    groups = read_groups(tmp_path / "data" / "atropos" / "groups.jsonl")
    assert len(groups) == 2
    assert all(len(group["scores"]) == 8 for group in groups)
    assert all(marks["match"] for group in groups for marks in group["overrides"])
    assert (tmp_path / "data" / "atropos" / "groups.html").is_file()
    metrics = json.loads((tmp_path / "runs" / "atropos-eval" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["results"]["all"]["eval/match_rate"] == pytest.approx(1.0)
    requests = [r for r in chat.requests if r.key is not None]
    assert {r.body["model"] for r in requests} == {MODEL}
