"""Child processes end with their owner (execution/lifetime.py): a process that runs a query on an
execution worker (forked from the fork server) and a task on a ``spawn`` pool (the audit's and
build-suite's) is killed with SIGKILL; its children, the fork server and the resource tracker are gone
within 5 s, and the caller's read of the owner's stdout ends."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SETTLE_S = 5.0

OWNER = textwrap.dedent(
    """
    import multiprocessing, sys, threading, time

    from progress_sql.execution.jobs import ExecJob
    from progress_sql.execution.executor import ExecLimits
    from progress_sql.execution.lifetime import BoundProcessPool
    from progress_sql.execution.pool import ExecutionPool

    if __name__ == "__main__":
        spawned = BoundProcessPool(1, multiprocessing.get_context("spawn"))
        sleeping = spawned.submit(time.sleep, 600)
        pool = ExecutionPool(1)
        slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
        job = ExecJob(sys.argv[1], slow, ExecLimits(timeout_s=600))
        threading.Thread(target=pool.run, args=(job,), daemon=True).start()
        while not (pool.worker_pids()[0] and spawned._processes):
            time.sleep(0.05)
        print("running", flush=True)
        time.sleep(600)
    """
)


def descendants(root: int) -> set[int]:
    """Every live process whose chain of parents reaches ``root`` (zombies left out)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_children_of_a_killed_owner_end(tmp_path: Path) -> None:
    database = tmp_path / "one.sqlite"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE t (x INTEGER)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(database)], stdout=subprocess.PIPE, env=env)
    children: set[int] = set()
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline() == b"running\n"
        children = descendants(owner.pid)
        # the resource tracker, the fork server, the execution worker (mid-query) and the spawn pool's process
        assert len(children) >= 4, children
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        killed = time.monotonic()
        while (left := {pid for pid in children if alive(pid)}) and time.monotonic() < killed + SETTLE_S:
            time.sleep(0.05)
        assert not left, f"children alive {SETTLE_S:g} s after their owner was killed: {left}"
        assert owner.stdout.read() == b""  # nobody holds the owner's stdout any more: the read ends
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for pid in children:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
