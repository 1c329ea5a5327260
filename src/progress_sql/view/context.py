"""What a run's records leave out and its example view shows: the question, the gold SQL, the tables
the gold and the final prediction name (with their columns) and the first rows of both results.

``eval`` and ``rollout`` write it into their run folder as ``examples.jsonl`` (one line per example,
by ``index``), so that the page is built from the run folder alone (docs/view.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from progress_sql.errors import DatasetError
from progress_sql.execution.gold import GoldStore
from progress_sql.runfolder import write_jsonl
from progress_sql.types import PREVIEW_ROWS, Example, ResultPreview

#: The run folder's file of example contexts.
CONTEXT_FILE = "examples.jsonl"


@dataclass(frozen=True, slots=True)
class ExampleContext:
    """One example's inputs and results for the page; ``schema`` maps each table named by the gold or
    the predicted SQL to its columns; ``gold`` / ``predicted`` are None when they were not asked for
    (``eval``'s records carry the results they were judged on themselves)."""

    index: int
    db_id: str
    question: str
    gold_sql: str
    predicted_sql: str | None
    schema: Mapping[str, tuple[str, ...]]
    gold: ResultPreview | None
    predicted: ResultPreview | None
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


def example_contexts(
    examples: Sequence[Example],
    predicted: Mapping[int, str | None],
    store: GoldStore,
    *,
    rows: int = PREVIEW_ROWS,
    with_results: bool = True,
) -> list[ExampleContext]:
    """The context of every example: ``predicted`` maps an example's index to the SQL its record
    ends with (None: no SQL). ``with_results``: the first ``rows`` rows of the gold's result (prepared
    once by the store) and of that SQL's (run again in the store's pool: for records that keep no
    rows, a rollout's); without it nothing runs."""
    contexts = []
    for example in examples:
        sql = predicted.get(example.index)
        if not Path(example.db_path).is_file():
            contexts.append(_without_database(example, sql, "database absent"))
            continue
        try:
            schema = store.schema(example.db_path)
            prepared = store.prepare(example)
        except DatasetError as error:  # an unreadable database: the page says so
            contexts.append(_without_database(example, sql, str(error)))
            continue
        names = list(dict.fromkeys(tables_named(example.gold_sql, list(schema.tables)) +
                                   tables_named(sql, list(schema.tables))))  # fmt: skip
        gold = ResultPreview.of(prepared.results[0], rows) if with_results and prepared.results else None
        pred = ResultPreview.of(store.run_pred(example, sql), rows) if with_results and sql else None
        contexts.append(
            ExampleContext(
                example.index,
                example.db_id,
                example.question,
                example.gold_sql,
                sql,
                {name: schema.tables[name] for name in names},
                gold,
                pred,
                prepared.error,
            )
        )
    return contexts


def write_contexts(out: Path, contexts: Sequence[ExampleContext]) -> Path:
    """``out/examples.jsonl``; returns its path (OSError propagates)."""
    out.mkdir(parents=True, exist_ok=True)
    return write_jsonl(out / CONTEXT_FILE, contexts)


def _without_database(example: Example, sql: str | None, why: str) -> ExampleContext:
    """The context of an example whose database cannot be read: no tables, no results, the reason."""
    return ExampleContext(example.index, example.db_id, example.question, example.gold_sql, sql, {}, None, None, why)
