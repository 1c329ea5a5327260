"""Several training processes in vLLM server mode: two real processes (torch.distributed, gloo on CPU)
roll out with TRL's ``VLLMGeneration`` and a scripted server while their numbers of live conversations
differ (rank 0's end at the first turn, rank 1's take three). Every process must make the same
collective calls, each must get its own completions back, and none may wait forever."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from progress_sql.data import case_study
from tests.conftest import build_database

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("trl_ranks_worker.py")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_ranks_with_different_live_conversations_stay_aligned(tmp_path: Path) -> None:
    database = build_database("contact_lenses.sql", tmp_path / "databases")
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
        "--master_port", str(free_port()), str(WORKER), str(database), str(tmp_path),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)]),
           "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}  # fmt: skip
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        log, _ = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        log, _ = process.communicate()
        pytest.fail(f"the training processes did not finish (deadlock):\n{log[-4000:]}")
    assert process.returncode == 0, log[-4000:]
    seen = {rank: json.loads((tmp_path / f"rank{rank}.json").read_text(encoding="utf-8")) for rank in (0, 1)}

    # each process's conversations got their own answers, turn by turn
    assert (seen[0]["num_turns"], seen[0]["k_star"]) == ([1, 1], [1, 1])
    assert (seen[1]["num_turns"], seen[1]["k_star"]) == ([3, 3], [3, 3])
    assert all(sql == case_study.GOLD_SQL for rank in (0, 1) for sql in seen[rank]["final_sql"])
    assert all(answer.count("nope") == 2 for answer in seen[1]["answers"])
    # the call sequence is the same on every process: one per turn of the budget, even with nothing to ask
    assert seen[0]["generator_calls"] == seen[1]["generator_calls"] == 3
    # one request per turn for every process's live contexts: 2 + 2, then 0 + 2 twice
    assert seen[0]["server_requests"] == [4, 2, 2]
    # train's metrics: one row per step in the run's file (the main process writes it), with the
    # trajectory statistics reduced over the processes: rank 0's episodes take 1 turn, rank 1's 3
    written = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["step"] for row in written] == [1, 2]
    assert [row["trajectory/turns_mean"] for row in written] == [2.0, 2.0]
    assert [row["trajectory/first_correct_turn_mean"] for row in written] == [2.0, 2.0]
    # every process holds the same reduced rows
    rows = [json.loads((tmp_path / f"rows{rank}.json").read_text(encoding="utf-8")) for rank in (0, 1)]
    assert rows[0] == rows[1] == written
