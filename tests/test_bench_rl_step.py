"""bench/rl_step.py's smoke run (4 synthetic prompts x 2 samples x 3 turns, every way of stepping), in a
subprocess as a user runs it: the batched, the one-at-a-time and the hosted steps (on threads, each call
alone or coalesced) end with the same matches, the batch runs no more queries than one step per call,
and the section lands in the document."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

BENCH = REPO_ROOT / "bench" / "rl_step.py"


def test_a_small_step_records_both_ways_of_stepping(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    argv = [sys.executable, str(BENCH), "--prompts", "4", "--group", "2", "--turns", "3", "--repeat", "1",
            "--workers", "1", "--alone", "--hosted-threads", "4", "--doc", str(doc)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    text = doc.read_text(encoding="utf-8")
    assert text.count("## One RL step at scale (issue 35)") == 1
    rows = [line.strip("|").split("|") for line in text.splitlines() if line.startswith("| batched") or
            line.startswith("| alone")]  # fmt: skip
    (batched, alone) = [[cell.strip() for cell in row] for row in rows]
    assert batched[2] == alone[2] == "8"  # trajectories
    assert batched[3] == alone[3]  # the same turns were played
    assert batched[5] == alone[5]  # and matched the same
    assert int(batched[4]) <= int(alone[4])  # each distinct query of a batch once
    hosted = [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines()
              if line.startswith("| hosted")]  # fmt: skip
    assert [row[0] for row in hosted] == ["hosted, one round trip per call", "hosted, coalesced"]
    for row in hosted:
        assert row[3:5] == [batched[2], batched[3]]  # the same trajectories and turns
        assert row[6] == batched[5]  # and matches
    each_alone, coalesced = hosted
    assert int(coalesced[7]) <= int(each_alone[7])  # pool batches: coalesced calls share them
