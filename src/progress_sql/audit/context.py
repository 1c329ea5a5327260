"""What a check sees of one example: the gold, its syntax tree, the schema with declared types, and
ways to run SQL on the database (and on its perturbed copies), with results cached per text."""

from __future__ import annotations

import sqlite3
from functools import cached_property
from pathlib import Path

from sqlglot import exp

from progress_sql.audit.copies import PerturbedCopies
from progress_sql.audit.sqlinfo import ColumnInfo, Tables, quote_identifier
from progress_sql.data.schema import Schema, connect_readonly, table_names
from progress_sql.execution.executor import ExecLimits, Executor
from progress_sql.sql.normalize import resolve_double_quoted
from progress_sql.sql.parse import parse_sql
from progress_sql.types import Example, ExecResult


def read_tables(db_path: str | Path) -> dict[str, dict[str, ColumnInfo]]:
    """Tables and views of a database with their columns' declared types (opened read-only; the
    executor's authorizer refuses the pragma functions)."""
    connection = connect_readonly(db_path)
    try:
        names = table_names(connection, views=True)
        return {
            str(name).lower(): {
                str(column).lower(): ColumnInfo(str(column), str(declared or ""), bool(pk))
                for column, declared, pk in connection.execute(
                    "SELECT name, type, pk FROM pragma_table_info(?)", (name,)
                )
            }
            for name in names
        }
    except sqlite3.DatabaseError:
        return {}
    finally:
        connection.close()


class AuditContext:
    """One example under audit. Everything is computed on first use and cached."""

    def __init__(
        self,
        example: Example,
        executor: Executor,
        limits: ExecLimits,
        tables: Tables,
        copies: PerturbedCopies | None,
    ) -> None:
        self.example = example
        self.executor = executor
        self.limits = limits
        self.tables = tables
        self.copies = copies
        self.db_available = Path(example.db_path).is_file()
        self._results: dict[tuple[str, str], ExecResult] = {}

    @cached_property
    def tree(self) -> exp.Expr | None:
        """The gold's syntax tree with SQLite's double-quote rule applied; None when it does not parse."""
        tree = parse_sql(self.example.gold_sql)
        if not isinstance(tree, exp.Expr):
            return None
        return resolve_double_quoted(tree, self.example.gold_sql, self.schema)

    @cached_property
    def schema(self) -> Schema | None:
        """Table and column names of the database; None when they could not be read."""
        return Schema.from_mapping({t: list(c) for t, c in self.tables.items()}) if self.tables else None

    def run(self, sql: str, variant: str | None = None, limits: ExecLimits | None = None) -> ExecResult:
        """``sql`` on the database (``variant`` None) or on one of its perturbed copies, under the
        audit's limits or tighter ``limits``."""
        key = (variant or "", sql)
        if key not in self._results:
            if variant is None:
                self._results[key] = self.executor.run(self.example.db_path, sql, limits or self.limits)
            else:
                assert self.copies is not None, "perturbed copies are not available"
                self._results[key] = self.copies.run(variant, sql, limits or self.limits)
        return self._results[key]

    @property
    def gold(self) -> ExecResult:
        """The gold's result on the database (only call when :attr:`db_available`)."""
        return self.run(self.example.gold_sql)

    @property
    def gold_ok(self) -> bool:
        """The database is there and the gold ran to completion, untruncated."""
        return self.db_available and self.gold.ok and not self.gold.truncated

    def column_values(self, table: str, column: str, limit: int = 5000) -> list[object]:
        """Up to ``limit`` non-NULL stored values of a column (for type and literal checks)."""
        result = self.run(
            f"SELECT {quote_identifier(column)} FROM {quote_identifier(table)} "
            f"WHERE {quote_identifier(column)} IS NOT NULL LIMIT {limit}"
        )
        return [row[0] for row in result.rows] if result.ok else []
