"""Turn benchmark files (Spider, BIRD, Spider-Syn, SynSQL-2.5M) into :class:`Example` records; the
formats: docs/data.md#loaders. A missing database file is not an error here: callers decide."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.data.taskfile import ambiguity_from, write_spec_from
from progress_sql.errors import DatasetError
from progress_sql.jsonio import read_json, read_json_lines
from progress_sql.types import Example


def database_path(db_root: str | Path, db_id: str) -> Path:
    """Where the release layout keeps ``db_id``'s SQLite file."""
    return Path(db_root) / db_id / f"{db_id}.sqlite"


def _read_json_list(path: Path) -> list[dict[str, Any]]:
    data = read_json_lines(path, "questions file") if path.suffix == ".jsonl" else read_json(path, "questions file")
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise DatasetError(f"{path}: expected a JSON list of objects")
    return data


def _field(item: dict[str, Any], names: tuple[str, ...], path: Path, index: int) -> str:
    for name in names:
        value = item.get(name)
        if isinstance(value, str):
            return value
    raise DatasetError(f"{path}: example {index} has no string field {' / '.join(names)}")


@dataclass(frozen=True, slots=True)
class _Fields:
    """Which JSON fields of a questions file hold the question, the gold SQL, the evidence and the
    difficulty."""

    question: tuple[str, ...] = ("question",)
    gold: tuple[str, ...] = ("query", "SQL", "sql")
    difficulty: tuple[str, ...] = ("hardness", "difficulty")
    evidence: tuple[str, ...] = ("evidence",)


def _load(questions: str | Path, db_root: str | Path, fields: _Fields) -> list[Example]:
    path = Path(questions)
    examples = []
    for index, item in enumerate(_read_json_list(path)):
        db_id = _field(item, ("db_id",), path, index)
        difficulty = next((item[k] for k in fields.difficulty if isinstance(item.get(k), str)), None)
        examples.append(
            Example(
                index=index,
                question=_field(item, fields.question, path, index),
                db_id=db_id,
                db_path=str(database_path(db_root, db_id)),
                gold_sql=_field(item, fields.gold, path, index),
                evidence=next((item[k] for k in fields.evidence if isinstance(item.get(k), str)), ""),
                difficulty=difficulty,
                # Write tasks and ambiguous questions (docs/tasks.md): optional in any questions file.
                write=write_spec_from(item["write"], f"{path}: example {index}: write") if "write" in item else None,
                ambiguity=ambiguity_from(item["ambiguity"], f"{path}: example {index}: ambiguity")
                if "ambiguity" in item
                else (),
            )
        )
    return examples


def load_spider(questions: str | Path, db_root: str | Path) -> list[Example]:
    """Examples from a Spider-format questions file (``query`` or ``SQL`` holds the gold)."""
    return _load(questions, db_root, _Fields())


def load_bird(questions: str | Path, db_root: str | Path) -> list[Example]:
    """Examples from a BIRD-format questions file (``SQL``, ``evidence``, ``difficulty``)."""
    return _load(questions, db_root, _Fields(gold=("SQL", "query"), difficulty=("difficulty",)))


def load_spider_syn(questions: str | Path, db_root: str | Path) -> list[Example]:
    """Examples from a Spider-Syn file: the ``SpiderSynQuestion`` is the question, the gold ``query``."""
    return _load(questions, db_root, _Fields(question=("SpiderSynQuestion",), gold=("query",), difficulty=()))


def load_synsql(questions: str | Path, db_root: str | Path) -> list[Example]:
    """Examples from SynSQL-2.5M (``sql``; ``external_knowledge`` is the evidence, ``sql_complexity``
    the difficulty)."""
    fields = _Fields(gold=("sql", "SQL"), difficulty=("sql_complexity",), evidence=("external_knowledge", "evidence"))
    return _load(questions, db_root, fields)
