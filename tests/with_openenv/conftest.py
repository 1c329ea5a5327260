"""Fixtures of the OpenEnv tests: exported TRL rows on a real SQLite database (a row that plays, one
whose gold fails) and a real server over them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from progress_sql.export.build import export_items
from progress_sql.export.formats import build_rows, get_format
from progress_sql.integrations.hosted import close_pools
from progress_sql.integrations.openenv.server import build_app
from progress_sql.types import Example
from tests.conftest import build_database
from tests.with_openenv import serving

GOLD = 'SELECT name FROM singer WHERE country = "France" AND age > 40'
WRONG = "<think>all singers</think><sql>SELECT name FROM singer</sql>"
RIGHT = f"<think>filter</think><sql>{GOLD}</sql>"
#: A query that never ends on its own: only the executor's timeout stops it.
ENDLESS = (
    "<think>count forever</think>"
    "<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c</sql>"
)
#: The row whose gold fails (the export verifies golds, so it is broken after export).
FAILING_GOLD_INDEX = 1
#: The executor's limit per query on the test server: long enough that 31 short episodes on a loaded
#: two-core machine end well inside it, short enough for a test.
TIMEOUT_S = 10.0
SETTINGS = {"timeout_s": TIMEOUT_S, "max_turns": 3, "execution_workers": 8, "max_sessions": 40}


@pytest.fixture(scope="session")
def rows_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``train.jsonl`` as ``progress-sql export --format trl`` writes it: row 0 plays, row 1's gold fails."""
    folder = tmp_path_factory.mktemp("openenv")
    db = build_database("music.sql", folder / "database")
    examples = [
        Example(0, "Names of singers from France older than 40?", "music", str(db), GOLD),
        Example(1, "Which singers from France are over 40?", "music", str(db), GOLD),
    ]
    rows = build_rows(export_items([("spider-train", e) for e in examples]), get_format("trl"))
    rows[FAILING_GOLD_INDEX]["gold_sql"] = "SELECT nme FROM nowhere"
    out = folder / "data" / "trl" / "train.jsonl"
    out.parent.mkdir(parents=True)
    out.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def server(rows_file: Path) -> Iterator[str]:
    """The base URL of a real server over ``rows_file``: OpenEnv's app (:func:`build_app`) run by uvicorn
    in this process (a process of its own would import gradio again: minutes on a loaded machine;
    test_docs.py runs the page's uvicorn command as a process)."""
    with serving.in_process(build_app(rows_file, SETTINGS)) as url:
        yield url
    close_pools()
