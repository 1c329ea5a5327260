"""The embedded mini dataset of ``progress-sql train``: two Spider databases and their dev questions,
CC BY-SA 4.0 (``NOTICE.md`` beside this module; docs/data.md#the-embedded-mini-dataset).

>>> sorted(embedded_databases())
['concert_singer', 'pets_1']
>>> questions = real_questions()
>>> len(questions), questions[0].db_id
(87, 'concert_singer')
>>> Path(questions[0].db_path).is_file()
True
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from progress_sql.types import Example

#: The folder holding the embedded files (inside the installed package).
EMBEDDED_DIR = Path(__file__).resolve().parent
#: The embedded databases, in a fixed order.
DATABASE_IDS: tuple[str, ...] = ("concert_singer", "pets_1")
QUESTIONS_FILE = "real_questions.json"
#: Write tasks over the embedded databases, from four templates (docs/tasks.md#the-embedded-sets).
WRITE_TASKS_FILE = "write_tasks.json"
#: Spider dev questions over the embedded databases made ambiguous, each with its labelled slot.
AMBIGUOUS_FILE = "ambiguous_questions.json"


def embedded_databases() -> dict[str, Path]:
    """``db_id -> path of the .sqlite file`` for every embedded database (Spider's layout)."""
    return {db_id: EMBEDDED_DIR / db_id / f"{db_id}.sqlite" for db_id in DATABASE_IDS}


def real_questions() -> list[Example]:
    """Spider's dev questions over the embedded databases, with ``db_path`` on the embedded files.

    ``index`` is the position in ``real_questions.json``; ``difficulty`` is None (Spider's dev file
    has no hardness field).
    """
    paths = embedded_databases()
    rows = json.loads((EMBEDDED_DIR / QUESTIONS_FILE).read_text(encoding="utf-8"))
    return [
        Example(
            index=index,
            question=str(row["question"]),
            db_id=str(row["db_id"]),
            db_path=str(paths[row["db_id"]]),
            gold_sql=str(row["query"]),
        )
        for index, row in enumerate(rows)
    ]


def write_tasks() -> list[Example]:
    """The embedded write tasks (``write_tasks.json``; each entry also lists plausible wrong scripts
    under ``wrong``, the golden tests' fixtures), ``difficulty`` the template's name."""
    from progress_sql.data.loaders import load_spider

    examples = load_spider(EMBEDDED_DIR / WRITE_TASKS_FILE, EMBEDDED_DIR)
    rows = json.loads((EMBEDDED_DIR / WRITE_TASKS_FILE).read_text(encoding="utf-8"))
    return [replace(e, difficulty=str(row["template"])) for e, row in zip(examples, rows, strict=True)]


def ambiguous_questions() -> list[Example]:
    """The embedded ambiguous questions (``ambiguous_questions.json``), ``difficulty`` the slot's name."""
    from progress_sql.data.loaders import load_spider

    examples = load_spider(EMBEDDED_DIR / AMBIGUOUS_FILE, EMBEDDED_DIR)
    return [replace(e, difficulty=e.ambiguity[0].name) for e in examples]


__all__ = [
    "DATABASE_IDS",
    "EMBEDDED_DIR",
    "ambiguous_questions",
    "embedded_databases",
    "real_questions",
    "write_tasks",
]
