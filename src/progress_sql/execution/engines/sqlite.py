"""SQLite: the package's own :class:`~progress_sql.execution.executor.Executor` behind the engine
interface (a location is a file path; a ported collection is not needed: examples name their files)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from progress_sql.execution.digest import file_digest
from progress_sql.execution.engines.base import EngineName, EngineRunner
from progress_sql.execution.executor import Executor


@dataclass(frozen=True, slots=True)
class SqliteEngine:
    name: EngineName = "sqlite"
    display_name: str = "SQLite"
    dialect: str = "sqlite"

    def claims(self, location: str) -> bool:
        return True  # the fallback: every location no other engine claims is a SQLite file

    def runner(self) -> EngineRunner:
        return Executor()

    def content_identity(self, location: str) -> str:

        return file_digest(location)

    def locate(self, backend_db: str, db_id: str) -> str:
        return str(Path(backend_db) / db_id / f"{db_id}.sqlite")

    def public_location(self, location: str) -> str:
        return location
