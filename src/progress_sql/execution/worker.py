"""The loop a worker process runs: cap its own memory (so a memory bomb fails or kills only the worker),
then receive a job, execute it, send the result back. It imports nothing heavy, so it starts fast."""

from __future__ import annotations

import gc
import resource
import sqlite3
from dataclasses import replace
from multiprocessing.connection import Connection

from progress_sql.execution.engines import EngineRunners
from progress_sql.execution.jobs import ExecJob, WriteJob
from progress_sql.types import ExecResult

#: How many rows of a truncated result travel back to the parent (a prefix, for inspection).
TRUNCATED_ROWS_SENT = 1_000
#: What a worker sends once it can take jobs: the parent's deadlines count from here, not from the spawn.
READY = "ready"


def limit_memory(memory_bytes: int | None) -> None:
    """Cap this process's address space and SQLite's heap at ``memory_bytes`` (None: no cap)."""
    if memory_bytes is None:
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    # SQLite's own limit makes most bombs fail with SQLITE_NOMEM (a clean error) long before the
    # address-space limit would hit Python itself.
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"PRAGMA hard_heap_limit = {int(cap // 2)}")
    finally:
        conn.close()


def worker_main(conn: Connection, memory_bytes: int | None) -> None:
    """Serve jobs from ``conn`` until it sends None or closes."""
    gc.freeze()  # what the fork server imported lives as long as this process: no collection walks it
    limit_memory(memory_bytes)
    executor = EngineRunners()
    conn.send(READY)
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message is None:
                return
            # One job, or a chunk of them (run in order, each answered as it ends: execution/pool.py).
            for job in message if isinstance(message, tuple) else (message,):
                try:
                    conn.send(_run(executor, job))
                except MemoryError:
                    conn.send(ExecResult("error", error="out of memory while sending the result"))
                except (BrokenPipeError, OSError):
                    return
    finally:
        executor.close()


def _run(executor: EngineRunners, job: ExecJob) -> ExecResult:
    result: ExecResult
    try:
        if isinstance(job, WriteJob):  # a write task's job: a copy, a script, checks
            from progress_sql.execution.write import run_write  # sqlite backup and scripts: loaded on first use

            result = run_write(job)
        else:
            result = executor.run(job.db_path, job.sql, job.limits)
    except MemoryError:
        result = ExecResult("error", error="out of memory")
    if result.truncated and len(result.rows) > TRUNCATED_ROWS_SENT:
        # A truncated result never matches; shipping all its rows to the parent only costs time.
        result = replace(result, rows=result.rows[:TRUNCATED_ROWS_SENT])
    return result
