"""A case a test suite exists for (seed 002, point 2): on the original database the gold counts 5
rows, so the hard-coded ``SELECT 5`` returns the gold's result there; on the suite's databases
(same schema, other rows) the count differs and only the honest query still matches. Real SQLite
files in the layout the loaders and ``testsuite/manifest.py`` read (``suite/<db_id>/*.sqlite``)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.types import Example

GOLD = "SELECT count(*) FROM item"
HARD_CODED = "SELECT 5"
QUESTION = "How many items are there?"
DB_ID = "tally"


def answer(sql: str) -> str:
    return f"<think>count them</think><sql>{sql}</sql>"


def _database(path: Path, rows: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # building the case twice in one folder gives the same files
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE item (item_id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO item VALUES (?, ?)", [(i, f"item {i}") for i in range(rows)])
    conn.close()
    return path


@dataclass(frozen=True, slots=True)
class SuiteCase:
    folder: Path
    questions: Path
    suite: Path
    example: Example


def build_suite_case(folder: Path) -> SuiteCase:
    """``folder/questions.json`` + ``folder/database/tally/tally.sqlite`` (5 items) and
    ``folder/suite/tally/{a,b}.sqlite`` (3 and 8 items)."""
    db = _database(folder / "database" / DB_ID / f"{DB_ID}.sqlite", 5)
    suite = folder / "suite"
    _database(suite / DB_ID / "a.sqlite", 3)
    _database(suite / DB_ID / "b.sqlite", 8)
    questions = folder / "questions.json"
    questions.write_text(json.dumps([{"db_id": DB_ID, "question": QUESTION, "query": GOLD}]), encoding="utf-8")
    return SuiteCase(folder, questions, suite, Example(0, QUESTION, DB_ID, str(db), GOLD))


def carrying_suite(row: dict[str, Any], suite: Path) -> dict[str, Any]:
    """``row`` (exported without a suite) as ``progress-sql export --suite`` writes it: ``suite``, the
    absolute folder, beside the example's fields (a TRL row's column; ``extra_info`` of a verl or
    SkyRL row). Built by hand so that a trainer path that ignores the row's suite fails on its
    verdict; the tests also check that the exporter writes exactly this row."""
    if isinstance(row.get("extra_info"), dict):
        return {**row, "extra_info": {**row["extra_info"], "suite": str(suite.absolute())}}
    return {**row, "suite": str(suite.absolute())}
