"""What a run's records leave out and its example view shows: the question, the gold SQL and the
tables the gold and the final prediction name (with their columns). The first rows of both results
are in the records themselves (``gold_result`` / ``pred_result``: eval's and rollout's keep them).

``eval`` and ``rollout`` write it into their run folder as ``examples.jsonl`` (one line per example,
by ``index``), so that the page is built from the run folder alone (docs/view.md)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from progress_sql.data.schema import Schema
from progress_sql.errors import DatasetError
from progress_sql.runfolder import write_jsonl
from progress_sql.types import Example

#: The run folder's file of example contexts.
CONTEXT_FILE = "examples.jsonl"


@dataclass(frozen=True, slots=True)
class ExampleContext:
    """One example's inputs for the page; ``schema`` maps each table named by the gold or the
    predicted SQL to its columns; ``problem``: why the database or the gold could not be used."""

    index: int
    db_id: str
    question: str
    gold_sql: str
    predicted_sql: str | None
    schema: Mapping[str, tuple[str, ...]]
    problem: str | None = None


def tables_named(sql: str | None, tables: Sequence[str]) -> list[str]:
    """The tables of a schema that ``sql`` names as a word (case-insensitive), in schema order.

    >>> tables_named("SELECT name FROM Singer AS T1", ["singer", "concert", "name"])
    ['singer', 'name']
    """
    if not sql:
        return []
    words = set(re.findall(r"[a-z_][a-z0-9_]*", sql.lower()))
    return [table for table in tables if table.lower() in words]


class _Ended(Protocol):
    """What :func:`example_contexts` reads of a run's record (an eval's or a rollout's)."""

    @property
    def index(self) -> int: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str: ...


def example_contexts(
    examples: Sequence[Example],
    predicted: Mapping[int, str | None],
    records: Sequence[_Ended],
    schema_of: Callable[[str], Schema],
) -> list[ExampleContext]:
    """The context of every example: ``predicted`` maps an example's index to the SQL its record
    ends with (None: no SQL); a record whose gold could not be used gives its reason as the problem.
    ``schema_of`` reads a database's schema (the run's ``GoldStore.schema``, which keeps each once);
    no query runs."""
    problems = {r.index: r.reason for r in records if r.status == "gold_invalid"}
    contexts = []
    for example in examples:
        sql = predicted.get(example.index)
        if not Path(example.db_path).is_file():
            contexts.append(_without_database(example, sql, "database absent"))
            continue
        try:
            schema = schema_of(example.db_path)
        except DatasetError as error:  # an unreadable database: the page says so
            contexts.append(_without_database(example, sql, str(error)))
            continue
        names = list(dict.fromkeys(tables_named(example.gold_sql, list(schema.tables)) +
                                   tables_named(sql, list(schema.tables))))  # fmt: skip
        contexts.append(
            ExampleContext(
                example.index,
                example.db_id,
                example.question,
                example.gold_sql,
                sql,
                {name: schema.tables[name] for name in names},
                problems.get(example.index),
            )
        )
    return contexts


def write_contexts(out: Path, contexts: Sequence[ExampleContext]) -> Path:
    """``out/examples.jsonl``; returns its path (OSError propagates)."""
    out.mkdir(parents=True, exist_ok=True)
    return write_jsonl(out / CONTEXT_FILE, contexts)


def _without_database(example: Example, sql: str | None, why: str) -> ExampleContext:
    """The context of an example whose database cannot be read: no tables, no results, the reason."""
    return ExampleContext(example.index, example.db_id, example.question, example.gold_sql, sql, {}, why)
