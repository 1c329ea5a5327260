"""What a check sees of one example: the gold, its syntax tree, the schema with declared types, and
ways to run SQL on the database (and on its perturbed copies), with results cached per text."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from sqlglot import exp

from progress_sql.audit.copies import PerturbedCopies
from progress_sql.data.introspect import DatabaseProfile, quote_identifier, read_profile
from progress_sql.data.schema import Schema
from progress_sql.errors import DatasetError
from progress_sql.execution.executor import ExecLimits, Executor
from progress_sql.sql.normalize import resolve_double_quoted
from progress_sql.sql.parse import parse_sql
from progress_sql.types import Example, ExecResult


def read_audit_profile(db_path: str | Path) -> DatabaseProfile | None:
    """Tables and views of a database with their columns' declared types and keys (read through
    :mod:`progress_sql.data.introspect`: the executor's authorizer refuses the pragma functions);
    None when the file is not a readable database."""
    try:
        return read_profile(db_path, views=True)
    except DatasetError:
        return None


class AuditContext:
    """One example under audit. Everything is computed on first use and cached."""

    def __init__(
        self,
        example: Example,
        executor: Executor,
        limits: ExecLimits,
        profile: DatabaseProfile | None,
        copies: PerturbedCopies | None,
    ) -> None:
        self.example = example
        self.executor = executor
        self.limits = limits
        self.profile = profile
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
        return Schema.from_profile(self.profile) if self.profile is not None and self.profile.tables else None

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
