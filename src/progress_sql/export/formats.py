"""The row each trainer reads (``verl``, ``skyrl``, ``trl``), as pure functions, the file writers and
the one example codec: :func:`example_fields` / :func:`example_from_fields`, and per format
:attr:`ExportFormat.example`, which reads the example back from one of its rows. Each format's
columns and the shared ``extra_info``: docs/export.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from progress_sql.data.taskfile import task_from_json, task_json
from progress_sql.env.core import EnvConfig
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.jsonio import dumps_line
from progress_sql.prompts import Message
from progress_sql.registry import lookup
from progress_sql.types import Example

#: verl ``agent_name``: the name the verl integration registers its agent loop under.
VERL_AGENT_NAME = "progress_sql_agent"
#: SkyRL ``env_class``: the id :func:`progress_sql.integrations.skyrl.register_env` registers.
SKYRL_ENV_CLASS = "progress_sql"
#: verl ``ability``.
ABILITY = "sql"


@dataclass(frozen=True, slots=True)
class ExportItem:
    """One example ready to export: its source name, its opening messages, and whether its database
    was present."""

    example: Example
    source: str
    messages: tuple[Message, ...]
    verified: bool
    #: The test-suite folder (``progress-sql build-suite``) the trainer judges this row with: a match
    #: then means the gold's result on every suite database too. None: the original database alone.
    suite: str | None = None
    #: The SQL dialect the prompts ask for and the queries run in (sqlglot's name).
    dialect: str = "sqlite"
    #: The ported collection the queries run on (``--backend-db``), never with a password; None: SQLite files.
    backend_db: str | None = None
    #: Whether the opening messages offer the ``<ask>`` action (``export --offer-ask``): the trainer's
    #: environment then accepts a clarifying question on this row (:func:`row_env_config`).
    offer_ask: bool = False


#: The field of :func:`example_fields` holding the gold SQL; verl rows keep it in
#: ``reward_model.ground_truth``, SkyRL rows in ``reward_spec.ground_truth``, TRL rows in this column.
GOLD_FIELD = "gold_sql"
_REQUIRED = ("db_id", "db_path", "question", GOLD_FIELD)
#: The field holding a write task's or an ambiguous question's labels (``data/taskfile.py`` ``task_json``).
TASK_FIELD = "task_spec"


def example_fields(example: Example) -> dict[str, Any]:
    """The example as plain row fields (the inverse of :func:`example_from_fields`).

    >>> example = Example(3, "How many?", "shop", "/d/shop.sqlite", "SELECT 1", difficulty="easy")
    >>> example_from_fields(example_fields(example)) == example
    True
    """
    return {
        "source_index": example.index,
        "db_id": example.db_id,
        "db_path": example.db_path,
        "question": example.question,
        "evidence": example.evidence,
        "difficulty": example.difficulty or "",
        GOLD_FIELD: example.gold_sql,
        # Write tasks and ambiguous questions (docs/tasks.md), as one JSON string ("" for a read question).
        TASK_FIELD: task_json(example.write, example.ambiguity),
    }


def example_from_fields(fields: Mapping[str, Any], *, where: str = "a row", prefix: str = "") -> Example:
    """The :class:`Example` that a row's fields describe; the index is ``source_index`` (the row
    position ``index`` for rows written without it). A row without our fields is a DatasetError that
    names them (``prefix`` + name, said to be missing from ``where``)."""
    missing = [name for name in _REQUIRED if fields.get(name) is None]
    if "source_index" not in fields and "index" not in fields:
        missing.insert(0, "source_index")
    if missing:
        absent = ", ".join(prefix + name for name in missing)
        raise DatasetError(f"{where} lacks {absent}: write rows with progress-sql export")
    write, ambiguity = task_from_json(str(fields.get(TASK_FIELD) or ""), f"{where}: {prefix}{TASK_FIELD}")
    return Example(
        index=int(fields.get("source_index", fields.get("index", 0))),
        question=str(fields["question"]),
        db_id=str(fields["db_id"]),
        db_path=str(fields["db_path"]),
        gold_sql=str(fields[GOLD_FIELD]),
        evidence=str(fields.get("evidence") or ""),
        difficulty=str(fields.get("difficulty") or "") or None,
        write=write,
        ambiguity=ambiguity,
    )


def extra_info(item: ExportItem, index: int) -> dict[str, Any]:
    """The ``extra_info`` shared by every format (see the module docstring)."""
    fields = example_fields(item.example)
    del fields[GOLD_FIELD]  # each format writes the gold in its own ground-truth field
    suite = {} if item.suite is None else {SUITE_FIELD: item.suite}
    return {
        "index": index,
        **fields,
        "verified": item.verified,
        **suite,
        **backend_fields(item.dialect, item.backend_db),
        **({ASK_FIELD: True} if item.offer_ask else {}),
    }


#: The row field naming the row's test-suite folder (only in rows exported with ``--suite``).
SUITE_FIELD = "suite"
#: The row field saying the row's prompt offers ``<ask>`` (only in rows exported with ``--offer-ask``).
ASK_FIELD = "offer_ask"


def row_offers_ask(row: Mapping[str, Any]) -> bool:
    """Whether a row's prompt offers the ``<ask>`` action (a TRL row's column, or ``extra_info.offer_ask``
    of a verl or SkyRL row and of the kwargs or extras the trainers make of them).

    >>> row_offers_ask({"extra_info": {"offer_ask": True}}), row_offers_ask({"index": 0})
    (True, False)
    """
    info = row.get("extra_info")
    return bool(row.get(ASK_FIELD) or (info.get(ASK_FIELD) if isinstance(info, Mapping) else False))


def row_suite(row: Mapping[str, Any]) -> str | None:
    """The test-suite folder a row carries (a TRL row's column, or ``extra_info.suite`` of a verl or
    SkyRL row and of the kwargs or extras the trainers make of them); None without one.

    >>> row_suite({"extra_info": {"suite": "/suites/spider"}}), row_suite({"suite": None})
    ('/suites/spider', None)
    """
    info = row.get("extra_info")
    value = row.get(SUITE_FIELD) or (info.get(SUITE_FIELD) if isinstance(info, Mapping) else None)
    return str(value) if value else None


def row_env_config(config: EnvConfig, row: Mapping[str, Any]) -> EnvConfig:
    """The config one row's episode runs with: the row's test suite (:func:`row_suite`) when the
    trainer's settings name none, and the row's backend database likewise (settings win: they are the
    run's explicit choice); ``tasks.offer_ask`` when the row's prompt offers ``<ask>``
    (:func:`row_offers_ask`), so the environment accepts the question that prompt invites
    (``progress_sql.env.core.ask_offered``).

    >>> row_env_config(EnvConfig(), {}) == EnvConfig()
    True
    """
    suite = row_suite(row)
    info = row.get("extra_info")
    backend_db = row_backend_db(info if isinstance(info, Mapping) else row)
    changes: dict[str, Any] = {}
    if suite is not None and config.suite is None:
        changes["suite"] = suite
    if backend_db is not None and config.backend_db is None:
        changes["backend_db"] = backend_db
    if row_offers_ask(row) and not config.tasks.offer_ask:
        changes["tasks"] = replace(config.tasks, offer_ask=True)
    return replace(config, **changes) if changes else config


def backend_fields(dialect: str = "sqlite", backend_db: str | None = None) -> dict[str, Any]:
    """The row fields naming where the example's queries run (read back by :func:`row_backend_db`).

    >>> row_backend_db(backend_fields("postgres", "postgresql://reader@/bench?host=/run/pg"))
    'postgresql://reader@/bench?host=/run/pg'
    >>> row_backend_db({}) is None  # rows written before the field: SQLite files
    True
    """
    return {"dialect": dialect, "backend_db": backend_db}


def row_backend_db(fields: Mapping[str, Any]) -> str | None:
    """A row's backend database (``EnvConfig.backend_db``); None for SQLite files and older rows. The
    location has no password: give it to the driver through ``~/.pgpass`` or ``PGPASSWORD``."""
    value = fields.get("backend_db")
    return str(value) if value else None


def _messages(item: ExportItem) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in item.messages]


def verl_row(item: ExportItem, index: int) -> dict[str, Any]:
    """A row of verl's ``RLHFDataset`` parquet."""
    return {
        "data_source": item.source,
        "agent_name": VERL_AGENT_NAME,
        "prompt": _messages(item),
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": item.example.gold_sql},
        "extra_info": extra_info(item, index),
    }


def skyrl_row(item: ExportItem, index: int) -> dict[str, Any]:
    """A row of SkyRL's ``PromptDataset``: ``prompt`` and ``env_class``; the rest become ``extras``."""
    return {
        "data_source": item.source,
        "prompt": _messages(item),
        "env_class": SKYRL_ENV_CLASS,
        "reward_spec": {"method": "rule", "ground_truth": item.example.gold_sql},
        "extra_info": extra_info(item, index),
    }


def trl_row(item: ExportItem, index: int) -> dict[str, Any]:
    """A conversational TRL row; the other columns reach TRL's reward functions as keyword arguments."""
    return {"prompt": _messages(item), GOLD_FIELD: item.example.gold_sql, "data_source": item.source,
            **extra_info(item, index)}  # fmt: skip


def _section(row: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = row.get(key)
    if not isinstance(value, Mapping):
        raise DatasetError(f"{where} lacks {key}: write rows with progress-sql export")
    return value


def _ground_truth(row: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """The row's ``extra_info`` with the gold from ``row[key]["ground_truth"]``, as example fields."""
    truth = row.get(key)
    if not isinstance(truth, Mapping) or not isinstance(truth.get("ground_truth"), str):
        raise DatasetError(f"{where} lacks {key}.ground_truth: write rows with progress-sql export")
    return {**_section(row, "extra_info", where), GOLD_FIELD: truth["ground_truth"]}


def verl_example(row: Mapping[str, Any]) -> Example:
    """The example of a verl row (``extra_info`` and ``reward_model``; the agent loop's kwargs are one)."""
    return example_from_fields(_ground_truth(row, "reward_model", "verl row"), where="verl row", prefix="extra_info.")


def skyrl_example(row: Mapping[str, Any]) -> Example:
    """The example of a SkyRL row, or of the ``extras`` SkyRL makes of it (``extra_info``, ``reward_spec``)."""
    fields = _ground_truth(row, "reward_spec", "a progress_sql row")
    return example_from_fields(fields, where="a progress_sql row", prefix="extra_info.")


def trl_example(row: Mapping[str, Any]) -> Example:
    """The example of a TRL row (flat columns)."""
    return example_from_fields(row, where="a TRL row")


RowBuilder = Callable[[ExportItem, int], dict[str, Any]]
RowReader = Callable[[Mapping[str, Any]], Example]


@dataclass(frozen=True, slots=True)
class ExportFormat:
    """A trainer's row shape: ``row`` writes one, ``example`` reads its example back."""

    name: str
    row: RowBuilder
    example: RowReader
    suffix: str
    description: str


FORMATS: dict[str, ExportFormat] = {
    f.name: f
    for f in (
        ExportFormat("verl", verl_row, verl_example, ".parquet",
                     "verl RLHFDataset parquet (agent_name selects the agent loop)"),
        ExportFormat("skyrl", skyrl_row, skyrl_example, ".parquet",
                     "SkyRL PromptDataset rows (env_class progress_sql)"),
        ExportFormat("trl", trl_row, trl_example, ".jsonl",
                     "TRL conversational prompts with the example's columns"),
    )
}  # fmt: skip


def get_format(name: str) -> ExportFormat:
    return lookup(FORMATS, name, "export format")


def build_rows(items: Sequence[ExportItem], fmt: ExportFormat) -> list[dict[str, Any]]:
    """The rows of ``items`` in order; ``extra_info.index`` is each row's position."""
    return [fmt.row(item, index) for index, item in enumerate(items)]


def write_rows(rows: Iterable[dict[str, Any]], path: Path) -> None:
    """Write ``rows`` as parquet (``.parquet``) or JSON Lines (``.jsonl``, ``.json``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ConfigError("writing parquet needs pyarrow: pip install 'progress-sql[export]'") from None
        pq.write_table(pa.Table.from_pylist(list(rows)), path)
    elif path.suffix in (".jsonl", ".json"):
        with path.open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(dumps_line(row) + "\n")
    else:
        raise ConfigError(f"unknown output type {path.suffix or '(none)'} for {path}: use .parquet or .jsonl")
