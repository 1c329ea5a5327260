"""``progress-sql train`` and ``eval`` with their output in a file, as a batch job (Slurm, CI, ``nohup``)
writes it: every phase starts, reports its progress and ends in plain lines; no third-party
deprecation warning and no Hugging Face bar reaches the log."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import build_database
from tests.evaluation.test_eval_command import PREDICTIONS, QUESTIONS

ROOT = Path(__file__).resolve().parents[2]
#: ``[HH:MM:SS] <phase>: <what>``: every line a plain progress line writes.
LINE = re.compile(
    r"^\[\d\d:\d\d:\d\d\] (?P<phase>.+?): (?P<what>started, 0/\d+|\d+/\d+ \(\d+%\).*|done, .*|ended at .*)$"
)
#: The embedded default's held-out and validation sets, cut to the sizes of the tests' short runs
#: (tests/training/test_train_command.py): the command line itself is the console script's.
TRAIN = """
import sys
from dataclasses import replace

import progress_sql.studies.train as train
from progress_sql.cli import main

configured = train.train_config
train.train_config = lambda request: replace(
    configured(request), heldout_size=8, heldout_rl_size=8, sft_validation_size=8
)
sys.argv[0] = "progress-sql"
main()
"""


def run_logged(command: list[str], log: Path, cwd: Path) -> str:
    """Run ``command`` with stdout and stderr both into ``log`` (``> log 2>&1``); the log's text."""
    env = {**os.environ, "PROGRESS_SQL_PROGRESS_INTERVAL": "0", "OMP_NUM_THREADS": "1"}
    for name in ("PROGRESS_SQL_PROGRESS", "HF_HUB_DISABLE_PROGRESS_BARS", "PYTHONWARNINGS", "FORCE_COLOR"):
        env.pop(name, None)
    with log.open("w", encoding="utf-8") as file:
        done = subprocess.run(command, stdout=file, stderr=subprocess.STDOUT, cwd=cwd, env=env, timeout=900)
    text = log.read_text(encoding="utf-8")
    assert done.returncode == 0, text
    return text


def phase_lines(text: str) -> dict[str, list[str]]:
    """Each phase's plain lines, in order."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = LINE.match(line)
        if match:
            found.setdefault(match["phase"], []).append(match["what"])
    return found


def assert_no_third_party_noise(text: str) -> None:
    for line in text.splitlines():
        if re.search(r"(FutureWarning|DeprecationWarning|PendingDeprecationWarning)", line):
            raise AssertionError(f"a deprecation warning in the log: {line}")
        assert "site-packages" not in line, f"a third-party warning in the log: {line}"
        assert "\r" not in line, f"a tqdm bar in the log: {line!r}"
        assert "it/s]" not in line, f"a tqdm bar in the log: {line!r}"


def assert_started_progressed_ended(lines: list[str], total: int) -> None:
    assert lines[0] == f"started, 0/{total}"
    assert any(re.match(rf"\d+/{total} \(\d+%\), ", line) for line in lines[1:-1])
    assert lines[-1].startswith(f"done, {total}/{total} in ")


def test_eval_writes_plain_progress_lines_into_a_file(tmp_path: Path) -> None:
    build_database("shop.sql", tmp_path / "database")
    (tmp_path / "questions.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    (tmp_path / "pred.txt").write_text("\n".join(PREDICTIONS) + "\n", encoding="utf-8")
    script = shutil.which("progress-sql", path=str(Path(sys.executable).parent))
    assert script is not None
    text = run_logged(
        [script, "eval", "--task", "questions.json", "--predictions", "pred.txt", "--out", "out", "--workers", "1",
         "--no-view"],
        tmp_path / "log", tmp_path,
    )  # fmt: skip
    phases = phase_lines(text)
    (judging,) = (name for name in phases if name.startswith("eval spider on "))
    lines = phases[judging]
    assert lines[0].startswith("started, 0/")
    assert lines[-1].startswith("done, ")
    assert len(lines) >= 3
    assert all(re.match(r"\d+/\d+ \(\d+%\), ", line) for line in lines[1:-1])
    assert "execution accuracy (spider): 80.00%" in text  # the result as on a terminal
    assert_no_third_party_noise(text)


def test_train_writes_plain_progress_lines_for_every_phase_into_a_file(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="training needs the [trl] extra")
    text = run_logged(
        [sys.executable, "-c", TRAIN, "train", "--out", str(tmp_path / "run"), "--steps", "2", "--sft-steps", "6",
         "--sft-target", "0", "--rl-prompts", "6", "--prompts-per-step", "2", "--generations", "2",
         "--max-turn-tokens", "16", "--save-steps", "1", "--rl-select", "last", "--no-view"],
        tmp_path / "log", ROOT,
    )  # fmt: skip
    phases = phase_lines(text)
    assert list(phases) == [
        "supervised warm start (steps)", "EX before RL", "RL (grpo, reward progressive)", "EX after RL",
    ]  # fmt: skip
    assert_started_progressed_ended(phases["supervised warm start (steps)"], 6)
    assert_started_progressed_ended(phases["RL (grpo, reward progressive)"], 2)
    for measurement in ("EX before RL", "EX after RL"):
        assert phases[measurement][0] == "started, 0/1"
        assert phases[measurement][-1].startswith("done, 1/1 in ")
    assert "held-out" in text.lower()  # the final table as on a terminal
    assert_no_third_party_noise(text)
