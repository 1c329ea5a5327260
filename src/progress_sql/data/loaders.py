"""Turn benchmark files (Spider, BIRD, Spider-Syn, SynSQL-2.5M) into :class:`Example` records; the
formats: docs/data.md#loaders. A database that cannot be used is not an error here: the example keeps a
path inside its data folder and :func:`database_problem` says why (docs/data.md#data-checks)."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.data.taskfile import ambiguity_from, write_spec_from
from progress_sql.errors import DatasetError
from progress_sql.jsonio import read_json, read_json_lines
from progress_sql.types import Example


def database_path(db_root: str | Path, db_id: str) -> Path:
    """Where the release layout keeps ``db_id``'s SQLite file; for a ``db_id`` that is not one plain
    name (:func:`db_id_problem`), the databases folder itself, which no reader opens as a database: a
    path never leaves ``db_root``.

    >>> database_path("/data/database", "concert_singer").as_posix()
    '/data/database/concert_singer/concert_singer.sqlite'
    >>> database_path("/data/database", "../../etc").as_posix()
    '/data/database'
    """
    if db_id_problem(db_id) is not None:
        return Path(db_root)
    return Path(db_root) / db_id / f"{db_id}.sqlite"


# ---- data checks: can an example's database be used? (docs/data.md#data-checks) ----------------

#: The first 16 bytes of every SQLite 3 database file.
SQLITE_HEADER = b"SQLite format 3\x00"

#: Why a database cannot be used, one phrase per kind: every skip reason and refusal starts with one,
#: and a run's summary counts its skipped examples by them.
ABSENT = "database file absent"
NOT_A_FILE = "database path is not a file"
EMPTY = "database file empty"
UNREADABLE = "database file unreadable"
NOT_SQLITE = "not a SQLite database"
OUTSIDE = "db_id leaves the databases folder"
PROBLEM_KINDS: tuple[str, ...] = (ABSENT, NOT_A_FILE, EMPTY, UNREADABLE, NOT_SQLITE, OUTSIDE)


def db_id_problem(db_id: str) -> str | None:
    """Why ``db_id`` cannot name a folder of the databases folder (``'..'``, an absolute path, a path
    separator, a NUL), or None for one plain name.

    >>> db_id_problem("concert_singer") is None
    True
    >>> db_id_problem("../music")
    "db_id leaves the databases folder: '../music'"
    """
    plain = db_id not in ("", ".", "..") and not any(mark in db_id for mark in ("/", "\\", "\x00"))
    return None if plain else f"{OUTSIDE}: {db_id!r}"


def database_problem(example: Example) -> str | None:
    """Why ``example``'s database cannot be used (one line that starts with a :data:`PROBLEM_KINDS`
    phrase and names the path), or None when it can. A stat per call, like ``Path.is_file``; the file's
    header is read once per file (and again only when the file changes)."""
    outside = db_id_problem(example.db_id)
    return outside if outside is not None else file_problem(example.db_path)


def file_problem(path: str | Path) -> str | None:
    """Why the SQLite file at ``path`` cannot be used: absent, not a regular file (a folder, a pipe),
    empty, unreadable, or without SQLite's header; None when it has the header."""
    try:
        status = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return f"{ABSENT}: {path}"
    except OSError as error:  # a symlink loop, a name too long, no permission on a folder above
        return f"{UNREADABLE}: {path} ({error.strerror or type(error).__name__})"
    if not stat.S_ISREG(status.st_mode):  # never opened: reading a pipe would block
        kind = "a folder" if stat.S_ISDIR(status.st_mode) else "not a regular file"
        return f"{NOT_A_FILE}: {path} ({kind})"
    if status.st_size == 0:  # SQLite would read it as an empty database: no table, every gold fails
        return f"{EMPTY}: {path}"
    return _header_problem(str(path), status.st_ino, status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _header_problem(path: str, _inode: int, _size: int, _modified_ns: int) -> str | None:
    """The header check of :func:`file_problem`, once per version of a file (the stat fields are the key)."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        return f"{UNREADABLE}: {path} ({error.strerror or type(error).__name__})"
    return None if header == SQLITE_HEADER else f"{NOT_SQLITE}: {path}"


def problem_kind(reason: str) -> str:
    """The :data:`PROBLEM_KINDS` phrase a skip reason starts with (the reason itself for another one).

    >>> problem_kind("database file empty: /data/database/a/a.sqlite")
    'database file empty'
    """
    return next((kind for kind in PROBLEM_KINDS if reason.startswith(kind)), reason)


def nothing_scored(examples: int, skipped: Mapping[str, int], gold_invalid: int) -> str:
    """The error of a run that scored no example: how many there were and why each was left out
    (``skipped``: examples per :func:`problem_kind`; ``gold_invalid``: those whose gold failed).

    >>> nothing_scored(3, {"database file empty": 3}, 0)
    'nothing could be scored: 3 examples, 3 skipped (database file empty 3); no summary written'
    """
    if not examples:
        return "nothing could be scored: no example to evaluate (check --limit and the questions file)"
    parts = []
    if skipped:
        reasons = ", ".join(f"{kind} {count}" for kind, count in skipped.items())
        parts.append(f"{sum(skipped.values())} skipped ({reasons})")
    if gold_invalid:
        parts.append(f"{gold_invalid} with a gold query that failed")
    return f"nothing could be scored: {examples} examples, {', '.join(parts)}; no summary written"


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
