"""DuckDB never writes spill files beside the database: past ``memory_limit`` a query ends out of memory
instead of writing ``<db>.tmp/``, which a worker killed at its deadline would leave there (the hostile
corpus saw one; docs/semantics.md, the memory row). The child runs the query through the engine's own
runner and dies without closing, as a killed worker does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

duckdb = pytest.importorskip("duckdb", reason="needs the [engines] extra (scripts/test.sh installs it)")

SPILLING = "SELECT count(*) FROM (SELECT i, md5(CAST(i AS VARCHAR)) AS m FROM range(3000000) r(i) ORDER BY m)"

CHILD = """
import os, sys
from progress_sql.execution.engines.duck import DuckdbRunner
from progress_sql.execution.executor import ExecLimits
result = DuckdbRunner().run(sys.argv[1], sys.argv[2], ExecLimits(timeout_s=30, memory_bytes=20 * 2**20))
print(result.status, flush=True)
os._exit(0)  # no close: what a worker killed mid-query leaves behind
"""


def test_a_query_past_the_memory_limit_leaves_no_spill_files(tmp_path: Path) -> None:
    database = tmp_path / "small.duckdb"
    with duckdb.connect(str(database)) as conn:
        conn.execute("CREATE TABLE t AS SELECT 1 AS a")
    done = subprocess.run([sys.executable, "-c", CHILD, str(database), SPILLING], capture_output=True, text=True,
                          check=False, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "error"  # out of memory, as a query past the limit should end
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.duckdb"]
