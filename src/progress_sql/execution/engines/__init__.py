"""The execution engines (SQLite, PostgreSQL, DuckDB) behind one interface, chosen by the location
string: a ``postgresql://`` connection string, a ``duckdb:`` URL or a ``.duckdb`` file, else a SQLite
file. Locations, safety settings per engine and value normalisation: docs/semantics.md#engines.

>>> engine_of("postgresql://reader@/bench?host=/tmp#superhero").name
'postgresql'
>>> engine_of("data/x.duckdb").name, engine_of("data/x.sqlite").name
('duckdb', 'sqlite')
>>> public_location("postgresql://reader:secret@db.example:5432/bench#superhero")
'postgresql://reader@db.example:5432/bench#superhero'
"""

from __future__ import annotations

from progress_sql.execution.engines.base import ENGINE_NAMES, Engine, EngineName, EngineRunner
from progress_sql.execution.engines.duck import DuckdbEngine
from progress_sql.execution.engines.postgres import PostgresEngine
from progress_sql.execution.engines.sqlite import SqliteEngine
from progress_sql.execution.executor import ExecLimits
from progress_sql.types import ExecResult

#: Checked in order; SQLite, the fallback, last.
ENGINES: dict[EngineName, Engine] = {
    "postgresql": PostgresEngine(),
    "duckdb": DuckdbEngine(),
    "sqlite": SqliteEngine(),
}


def engine_of(location: str) -> Engine:
    """The engine a location (path or connection string) names."""
    return next(engine for engine in ENGINES.values() if engine.claims(str(location)))


def public_location(location: str) -> str:
    """``location`` without a password (what run folders, exports and logs may carry)."""
    return engine_of(location).public_location(location)


def locate(backend_db: str | None, db_id: str, db_path: str) -> str:
    """Where database ``db_id`` (whose SQLite file is ``db_path``) runs: the file itself without a
    backend, else its place in the ported collection ``backend_db`` (a PostgreSQL database with a
    schema per database, or a folder of DuckDB files; see ``progress-sql port-db``)."""
    if backend_db is None:
        return db_path
    return engine_of(backend_db).locate(backend_db, db_id)


class EngineRunners:
    """One runner per engine for a worker process, started on first use; dispatches by location."""

    def __init__(self) -> None:
        self._runners: dict[EngineName, EngineRunner] = {}

    def run(self, location: str, sql: str, limits: ExecLimits) -> ExecResult:
        engine = engine_of(location)
        runner = self._runners.get(engine.name)
        if runner is None:
            try:
                runner = self._runners[engine.name] = engine.runner()
            except ImportError as error:
                return ExecResult(
                    "error", error=f"the {engine.display_name} driver is not installed: {error}", failed_outside=True
                )
        return runner.run(location, sql, limits)

    def close(self) -> None:
        for runner in self._runners.values():
            runner.close()
        self._runners.clear()


__all__ = [
    "ENGINES",
    "ENGINE_NAMES",
    "Engine",
    "EngineName",
    "EngineRunner",
    "EngineRunners",
    "engine_of",
    "engine_settings",
    "locate",
    "public_location",
]


def engine_settings(backend_db: str) -> dict[str, str]:
    """What a run records of its backend database: engine, SQL dialect and location, never a password."""
    engine = engine_of(backend_db)
    return {"engine": engine.name, "dialect": engine.dialect, "location": engine.public_location(backend_db)}
