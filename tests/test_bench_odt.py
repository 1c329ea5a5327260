"""bench/odt.py --decompose on a few real pairs, in a subprocess as a user runs it: every stage is timed
and printed, and nothing is written to the document."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

BENCH = REPO_ROOT / "bench" / "odt.py"
STAGES = (
    "parse",
    "parse, GC off",
    "parse + double-quote rule (diagnose's entry)",
    "parse (pairs with two trees)",
    "ODT of parsed trees, alone",
    "parse, then ODT of the same (parsed) tree",
    "compare of built trees, alone",
    "parse, then compare of the same pair",
    "F_lex, alone",
    "parse, then F_lex of the same pair",
    "diagnose",
    "diagnose, GC off",
)


def test_decompose_times_every_stage_and_leaves_the_document(shared_data: Path, tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    argv = [sys.executable, str(BENCH), "--decompose", "--pairs", "40", "--repeat", "1",
            "--data-dir", str(shared_data), "--doc", str(doc)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]] for line in done.stdout.splitlines() if line.startswith("│")
    ]
    assert tuple(row[0] for row in rows) == STAGES
    by_name = {row[0]: row[1:] for row in rows}
    # each part alone has its extra cost beside a parse; the parse is its own baseline
    assert [name for name, cells in by_name.items() if cells[3]] == [
        "ODT of parsed trees, alone",
        "compare of built trees, alone",
        "F_lex, alone",
    ]
    assert by_name["parse"][2] == "1.00"
    assert not doc.exists()
