"""What a worker process is asked to run: one statement on one database (:class:`ExecJob`), or a write
script on a copy with its check queries (:class:`WriteJob`). Plain records, importable by every
module that builds, sends or runs jobs (the pool, the worker, the write runner, the gold store)."""

from __future__ import annotations

from dataclasses import dataclass

from progress_sql.execution.executor import DEFAULT_LIMITS, ExecLimits
from progress_sql.types import WriteStatement


@dataclass(frozen=True, slots=True)
class ExecJob:
    """One statement to run on one database: a SQLite file path or another engine's location
    (:func:`progress_sql.execution.engines.engine_of`)."""

    db_path: str
    sql: str
    limits: ExecLimits = DEFAULT_LIMITS


@dataclass(frozen=True, slots=True)
class WriteJob(ExecJob):
    """A DML script (``sql``) to run on a copy of ``db_path`` under ``spec``'s allowances, followed
    by ``probes`` (the check queries, then one ``SELECT *`` per compared table) on the state it left
    (:func:`progress_sql.execution.write.run_write`)."""

    tables: tuple[str, ...] = ()
    statements: tuple[WriteStatement, ...] = ("insert", "update", "delete")
    probes: tuple[str, ...] = ()


__all__ = ["ExecJob", "WriteJob"]
