"""Every python code block of docs/training.md and docs/tasks.md runs, except one right below ``<!-- needs: gpu -->``
(a GPU or a cluster). Each block runs from the repository root in a fresh namespace."""

from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("docs/training.md", "docs/tasks.md")
NEEDS_GPU = "<!-- needs: gpu -->"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class Block:
    doc: str
    line: int
    language: str
    code: str
    needs_gpu: bool

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"


def code_blocks(doc: str) -> list[Block]:
    """The fenced blocks of ``doc`` with the line they start on and whether the marker precedes them."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(Block(doc, line, match.group(1), match.group(2), before == NEEDS_GPU))
    return blocks


PYTHON_BLOCKS = [b for doc in DOCS for b in code_blocks(doc) if b.language == "python" and not b.needs_gpu]


def test_the_block_reader_sees_markers_languages_and_lines() -> None:
    blocks = code_blocks("docs/training.md")
    assert blocks, "docs/training.md has no code blocks"
    assert all(b.language in {"bash", "python", "text", ""} for b in blocks), [b.language for b in blocks]
    assert any(b.needs_gpu for b in blocks)
    assert PYTHON_BLOCKS, "no python block of docs/training.md is run"


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.name)
def test_python_block_runs(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    compiled = compile(block.code, block.name, "exec")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compiled, {"__name__": f"docs_snippet_{block.line}"})  # an exception fails the test
