"""docs/openenv.md's commands run: its bash serve block starts a real server (on a free port, from a
folder holding the exported rows the page names), its python blocks play against it, and its
``rollout_func`` runs in its own shape with a scripted model in place of ``sample_turn``. Blocks right
below a ``<!-- not run: ... -->`` line (installs, the Spider data, trl and a GPU) are not run."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv", reason="the OpenEnv tests need the [openenv] extra (docs/openenv.md)")

from tests.with_openenv import serving
from tests.with_openenv.conftest import RIGHT, WRONG

DOC = serving.ROOT / "docs" / "openenv.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_RUN = "<!-- not run:"
#: The port the page's commands use; the tests put a free one in its place.
DOC_PORT = "8001"


@dataclass(frozen=True, slots=True)
class Block:
    line: int
    language: str
    code: str
    run: bool


def blocks() -> list[Block]:
    text = DOC.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        found.append(Block(text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2),
                           not before.startswith(NOT_RUN)))  # fmt: skip
    return found


def runnable(language: str) -> list[Block]:
    return [b for b in blocks() if b.run and b.language == language]


def test_the_page_has_the_blocks_these_tests_run() -> None:
    [serve] = runnable("bash")
    assert "uvicorn progress_sql.integrations.openenv.app:app" in serve.code
    assert f"--port {DOC_PORT}" in serve.code
    python = runnable("python")
    assert len(python) == 2
    assert "def rollout_func(prompts, trainer)" in python[1].code
    assert all(f"localhost:{DOC_PORT}" in b.code for b in python)


@pytest.fixture(scope="module")
def page_server(rows_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The page's serve block, run by bash from a folder where ``data/trl/train.jsonl`` is the test rows."""
    folder = tmp_path_factory.mktemp("page")
    (folder / "data" / "trl").mkdir(parents=True)
    shutil.copy(rows_file, folder / "data" / "trl" / "train.jsonl")
    port = serving.free_port()
    [serve] = runnable("bash")
    script = serve.code.replace(f"--port {DOC_PORT}", f"--port {port}")
    process = serving.start(script, port=port, env={}, cwd=folder, log=folder / "server.log")
    yield f"http://localhost:{port}", folder
    serving.stop(process)


def run_block(block: Block, url: str, namespace: dict[str, Any]) -> dict[str, Any]:
    code = block.code.replace(f"http://localhost:{DOC_PORT}", url)
    exec(compile(code, f"docs/openenv.md:{block.line}", "exec"), namespace)  # an exception fails the test
    return namespace


def test_the_play_block_runs_against_the_served_page(
    page_server: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = page_server
    run_block(runnable("python")[0], url, {"__name__": "docs_openenv_play"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "0.0 False"
    assert printed[1].startswith("Feedback:")
    assert printed[-2:] == ["ok False", "1"]  # the feedback between may span lines


class ScriptedModel:
    """``sample_turn`` of the page with replies from a script: the context's ids are its characters
    (each turn's context extends the last, as the page assumes of a chat template)."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = iter(replies)
        self.contexts: list[list[int]] = []

    def __call__(self, trainer: Any, messages: list[dict[str, str]]) -> tuple[list[int], list[int], str]:
        context = [ord(c) for m in messages for c in m["content"]]
        self.contexts.append(context)
        reply = next(self.replies)
        return context, [ord(c) for c in reply], reply


def test_the_rollout_func_block_plays_episodes_in_trls_shape(
    page_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, folder = page_server
    monkeypatch.chdir(folder)  # the page's ROWS_FILE is relative, as a user runs it from the project
    model = ScriptedModel([WRONG, RIGHT, RIGHT])
    namespace = run_block(runnable("python")[1], url, {"__name__": "docs_openenv_rollout", "sample_turn": model})
    rows = [json.loads(line) for line in (folder / "data" / "trl" / "train.jsonl").read_text().splitlines()]
    prompts = [rows[0]["prompt"], rows[1]["prompt"]]  # the second row's gold fails

    batch = namespace["rollout_func"](prompts, trainer=None)

    assert set(batch) == {"prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward"}
    assert len(batch["prompt_ids"]) == len(batch["completion_ids"]) == len(batch["env_mask"]) == 2
    first_reward, failed_reward = batch["env_reward"]
    assert first_reward > 0  # WRONG, feedback, then RIGHT: a match on turn 2
    assert failed_reward == 0.0  # scored 0 and ended at its first step
    completion, mask = batch["completion_ids"][0], batch["env_mask"][0]
    assert len(completion) == len(mask)
    text = "".join(map(chr, completion))
    assert text.startswith(WRONG)
    assert text.endswith(RIGHT)
    feedback = "".join(chr(t) for t, m in zip(completion, mask, strict=True) if m == 0)
    assert feedback.startswith("Feedback:")  # the environment's tokens, masked out of the loss
    assert "".join(chr(t) for t, m in zip(completion, mask, strict=True) if m == 1) == WRONG + RIGHT
    assert batch["completion_ids"][1] == [ord(c) for c in RIGHT]
    assert namespace["env_reward"]([], env_reward=batch["env_reward"]) == batch["env_reward"]
