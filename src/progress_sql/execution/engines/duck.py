"""DuckDB in the worker process. A location is a DuckDB file: ``duckdb:///abs/path.duckdb``, or any
path ending in ``.duckdb``; a ported collection is a folder of ``<db_id>.duckdb`` files. The guards, in
DuckDB's own terms (docs/semantics.md#duckdb): the statement gate plus DuckDB's own parse (exactly one
statement, of type SELECT); a ``read_only`` connection; ``enable_external_access = false`` (no files,
no ATTACH, no COPY); extension auto-loading and auto-installing off; ``memory_limit`` and ``threads``;
the configuration locked; ``interrupt()`` from a timer at the deadline; fetching in batches under the
row and byte caps; the pool's worker processes around it all."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.execution.digest import file_digest
from progress_sql.execution.engines.base import Deadline, EngineName, EngineRunner, fetch_capped
from progress_sql.execution.executor import ExecLimits, OpenConnections, error_message, statement_gate
from progress_sql.jsonio import surrogate_refusal
from progress_sql.types import ExecResult, Row

_SCHEME = "duckdb:"
_SUFFIXES = (".duckdb", ".ddb")


def duckdb_path(location: str) -> str:
    """The file a DuckDB location names.

    >>> duckdb_path("duckdb:///data/bench/superhero.duckdb"), duckdb_path("x/y.duckdb")
    ('/data/bench/superhero.duckdb', 'x/y.duckdb')
    """
    if location.startswith(_SCHEME):
        rest = location[len(_SCHEME) :]
        return "/" + rest.lstrip("/") if rest.startswith("//") else rest
    return location


def safe_config(limits: ExecLimits) -> dict[str, Any]:
    """The settings every query's connection opens with (then the configuration is locked)."""
    return {
        "enable_external_access": False,
        "autoload_known_extensions": False,
        "autoinstall_known_extensions": False,
        "allow_community_extensions": False,
        "allow_unsigned_extensions": False,
        "memory_limit": f"{max(1, limits.memory_bytes // 2**20)}MB",
        # No spilling: past memory_limit a query ends out of memory instead of writing `<db>.tmp/` beside
        # the database, which a worker killed at its deadline would leave there.
        "temp_directory": "",
        "threads": 1,
    }


@dataclass(frozen=True, slots=True)
class DuckdbEngine:
    name: EngineName = "duckdb"
    display_name: str = "DuckDB"
    dialect: str = "duckdb"

    def claims(self, location: str) -> bool:
        return location.startswith(_SCHEME) or location.lower().endswith(_SUFFIXES)

    def runner(self) -> EngineRunner:
        return DuckdbRunner()

    def content_identity(self, location: str) -> str:

        return file_digest(duckdb_path(location))

    def locate(self, backend_db: str, db_id: str) -> str:
        return f"{_SCHEME}{Path(duckdb_path(backend_db)).resolve() / f'{db_id}.duckdb'}"

    def public_location(self, location: str) -> str:
        return location


class DuckdbRunner:
    """Keeps a few read-only connections (one per file and memory cap)."""

    def __init__(self, max_connections: int = 8) -> None:
        import duckdb

        self._duckdb = duckdb
        self._connections: OpenConnections[Any] = OpenConnections(max_connections)

    def close(self) -> None:
        self._connections.close()

    def _connection(self, path: str, limits: ExecLimits) -> Any:
        key = (path, limits.memory_bytes)
        conn = self._connections.get(key)
        if conn is not None:
            return conn
        if not Path(path).is_file():
            raise FileNotFoundError(f"database file not found: {path}")
        conn = self._duckdb.connect(path, read_only=True, config=safe_config(limits))
        conn.execute("SET lock_configuration = true")
        return self._connections.add(key, conn)

    def _refusal(self, conn: Any, sql: str) -> str | None:
        """Why ``sql`` may not run: the shared gate, then DuckDB's own parse of it."""
        refusal = statement_gate(sql) or surrogate_refusal(sql)  # DuckDB's binding takes UTF-8 text only
        if refusal is not None:
            return refusal
        statements = conn.extract_statements(sql)
        if len(statements) != 1:
            return f"expected exactly one statement, found {len(statements)}"
        kind = statements[0].type
        if kind != self._duckdb.StatementType.SELECT:
            return f"only SELECT, WITH and VALUES statements may run, found {kind.name}"
        return None

    def run(self, location: str, sql: str, limits: ExecLimits) -> ExecResult:
        start = time.perf_counter()
        duckdb = self._duckdb
        path = duckdb_path(location)
        try:
            conn = self._connection(path, limits)
        except (duckdb.Error, OSError) as error:
            return ExecResult("error", error=f"cannot open database: {error_message(error)}", failed_outside=True)
        deadline = Deadline(limits.timeout_s, conn.interrupt)
        rows: list[Row] = []
        try:
            refusal = self._refusal(conn, sql)
            if refusal is not None:
                return ExecResult("error", error=refusal, elapsed_s=time.perf_counter() - start)
            deadline.start()
            cursor = conn.execute(sql)
            columns = tuple(d[0] for d in cursor.description or ())
            truncated = fetch_capped(cursor, limits, rows)
        except (duckdb.Error, ValueError, OverflowError, UnicodeError, RuntimeError) as error:
            rows.clear()
            elapsed = time.perf_counter() - start
            if deadline.fired.is_set() or isinstance(error, duckdb.InterruptException):
                return ExecResult("timeout", error=f"exceeded {limits.timeout_s:g} s", elapsed_s=elapsed)
            if isinstance(error, duckdb.OutOfMemoryException):
                return ExecResult("error", error="out of memory", elapsed_s=elapsed)
            return ExecResult("error", error=error_message(error), elapsed_s=elapsed)
        except MemoryError:
            rows.clear()
            return ExecResult("error", error="out of memory", elapsed_s=time.perf_counter() - start)
        finally:
            deadline.cancel()
        return ExecResult(
            "ok", columns=columns, rows=tuple(rows), elapsed_s=time.perf_counter() - start, truncated=truncated
        )
