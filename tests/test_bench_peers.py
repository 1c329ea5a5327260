"""bench/peers.py's smoke run (``--quick``: 4 Spider / BIRD prompts x 2 samples) on the shared data, in a
subprocess as a user runs it: every system that runs here scores every trajectory, leaves the database
files as they were and lands in the "## Peers" table; our environment also ends the pathological
workload, whose query would run for hours, by its own deadline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

BENCH = REPO_ROOT / "bench" / "peers.py"
#: The peers that need nothing beyond the [skyrl] extra and func_timeout / sqlparse; nemo-gym needs its side
#: environment and OmniSQL a checkout, so they are left to the recorded run.
SYSTEMS = ("progress-sql", "skyrl-gym", "sql-r1", "arctic-text2sql-r1")


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, check=False)


def _rows(doc: Path) -> list[list[str]]:
    text = doc.read_text(encoding="utf-8")
    section = text[text.index("## Peers") :]
    lines = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| system ")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_quick_run_scores_every_trajectory_and_records_the_table(shared_data: Path, tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    done = _bench("--quick", "--workloads", "a,c", "--systems", ",".join(SYSTEMS), "--cap", "120",
                  "--data-dir", str(shared_data), "--doc", str(doc))  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = _rows(doc)
    assert [(r[0], r[1]) for r in rows] == [(s, w) for w in ("(a) Spider dev", "(c) BIRD superhero") for s in SYSTEMS]
    for system, _workload, verdicts, *_middle, unchanged, note in rows:
        if note.startswith("not run: needs"):  # a peer's package missing here: the row says which
            assert system != "progress-sql"
            continue
        assert (verdicts, unchanged, note) == ("8", "yes", ""), (system, note)


def test_our_deadline_ends_the_pathological_workload(shared_data: Path, tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    done = _bench("--quick", "--workloads", "b", "--systems", "progress-sql", "--cap", "120",
                  "--data-dir", str(shared_data), "--doc", str(doc))  # fmt: skip
    assert done.returncode == 0, done.stderr
    [row] = _rows(doc)
    assert (row[0], row[2], row[-2], row[-1]) == ("progress-sql", "8", "yes", "")


def test_without_the_shared_data_it_says_so(tmp_path: Path) -> None:
    done = _bench("--quick", "--data-dir", str(tmp_path), "--no-doc")
    assert done.returncode == 1
    assert "needs ../shared/data" in done.stderr
