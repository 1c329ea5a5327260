"""Temporary copies of a database whose rows are stored in another physical order (``reversed``,
``shuffled``; docs/audit.md#design), in one temporary folder removed by
:meth:`PerturbedCopies.close`; the original is only ever opened read-only."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from progress_sql.data.introspect import quote_identifier, readonly_uri
from progress_sql.execution.executor import REVERSED_SCANS, ExecLimits, Executor
from progress_sql.types import Closing, ExecResult

#: Insertion order of each variant (an ORDER BY over the source table's rowid).
VARIANT_ORDER = {"reversed": "rowid DESC", "shuffled": "(rowid * 2654435761) % 4294967291, rowid"}
#: Session pragmas each variant is queried with.
VARIANT_PRAGMAS = {"reversed": REVERSED_SCANS, "shuffled": ()}


def build_copy(source: Path, target: Path, order: str) -> None:
    """Write a copy of ``source`` to ``target`` with every table's rows inserted in ``order``."""
    connection = sqlite3.connect(target.resolve().as_uri(), uri=True, isolation_level=None)
    try:
        connection.execute("ATTACH DATABASE ? AS src", (readonly_uri(source),))
        entries = connection.execute(
            "SELECT type, name, sql FROM src.sqlite_master "
            "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' AND type != 'trigger' ORDER BY rowid"
        ).fetchall()
        connection.execute("BEGIN")
        for kind, name, sql in entries:
            if kind == "table":
                connection.execute(sql)
                _copy_rows(connection, name, order)
        for kind, _name, sql in entries:
            if kind in ("index", "view"):
                connection.execute(sql)
        connection.execute("COMMIT")
        connection.execute("DETACH DATABASE src")
    finally:
        connection.close()


def _copy_rows(connection: sqlite3.Connection, table: str, order: str) -> None:
    quoted = quote_identifier(table)
    try:
        connection.execute(f"INSERT INTO main.{quoted} SELECT * FROM src.{quoted} ORDER BY {order}")
    except sqlite3.OperationalError:  # WITHOUT ROWID tables: stored by primary key whatever we do
        connection.execute(f"INSERT INTO main.{quoted} SELECT * FROM src.{quoted}")


class PerturbedCopies(Closing):
    """Lazily built perturbed copies of one database, removed on :meth:`close`."""

    def __init__(self, source: str | Path, scratch_dir: str | Path | None = None) -> None:
        self.source = Path(source)
        self._scratch_dir = scratch_dir
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._paths: dict[str, Path] = {}
        self._executors: dict[str, Executor] = {}

    def path(self, variant: str) -> Path:
        """The copy for ``variant`` (built on first use)."""
        if variant not in VARIANT_ORDER:
            raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANT_ORDER)}")
        if variant not in self._paths:
            if self._folder is None:
                self._folder = tempfile.TemporaryDirectory(prefix="progress-sql-audit-", dir=self._scratch_dir)
            target = Path(self._folder.name) / f"{variant}.sqlite"
            build_copy(self.source, target, VARIANT_ORDER[variant])
            self._paths[variant] = target
        return self._paths[variant]

    def run(self, variant: str, sql: str, limits: ExecLimits) -> ExecResult:
        """Run ``sql`` read-only on the ``variant`` copy with that variant's session pragmas."""
        try:
            path = self.path(variant)
        except sqlite3.Error as error:
            return ExecResult("error", error=f"cannot build the {variant} copy: {error}")
        executor = self._executors.setdefault(variant, Executor(max_connections=1, pragmas=VARIANT_PRAGMAS[variant]))
        return executor.run(path, sql, limits)

    def close(self) -> None:
        for executor in self._executors.values():
            executor.close()
        self._executors.clear()
        self._paths.clear()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
