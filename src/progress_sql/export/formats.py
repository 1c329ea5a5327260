"""The row each trainer reads, as pure functions, and the file writers.

* ``verl``: verl's ``RLHFDataset`` rows (parquet): ``data_source``, ``agent_name`` (selects the
  agent loop; without it verl falls back to its single-turn loop), ``prompt`` (chat messages),
  ``ability``, ``reward_model`` (``style``, ``ground_truth`` = gold SQL) and ``extra_info``.
* ``skyrl``: SkyRL's ``PromptDataset`` rows (parquet): ``prompt``, ``env_class``, and every other
  column reaches the environment as ``extras`` (``reward_spec``, ``extra_info``, ``data_source``).
* ``trl``: conversational ``prompt`` plus flat columns (TRL hands every dataset column to the reward
  functions), JSON Lines by default.

``extra_info`` is the same for every format: what an environment needs to rebuild the
:class:`~progress_sql.types.Example` (``db_id``, ``db_path``, ``question``, ``evidence``, the gold in
the format's own ground-truth field) plus ``index`` (the row's position in the file), ``source_index``
(the example's index in its dataset) and ``verified`` (False when the database file was absent at
export time: such a row cannot be executed until its database is put in place).

>>> from progress_sql.types import Example
>>> item = ExportItem(Example(3, "How many?", "shop", "/d/shop.sqlite", "SELECT 1"), "spider-train",
...                   ({"role": "user", "content": "How many?"},), verified=True)
>>> row = verl_row(item, 0)
>>> row["agent_name"], row["reward_model"], row["extra_info"]["source_index"]
('progress_sql_agent', {'style': 'rule', 'ground_truth': 'SELECT 1'}, 3)
>>> skyrl_row(item, 0)["env_class"], trl_row(item, 0)["gold_sql"]
('progress_sql', 'SELECT 1')
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.errors import ConfigError
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


def extra_info(item: ExportItem, index: int) -> dict[str, Any]:
    """The ``extra_info`` shared by every format (see the module docstring)."""
    example = item.example
    return {
        "index": index,
        "source_index": example.index,
        "db_id": example.db_id,
        "db_path": example.db_path,
        "question": example.question,
        "evidence": example.evidence,
        "difficulty": example.difficulty or "",
        "verified": item.verified,
    }


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
    return {"prompt": _messages(item), "gold_sql": item.example.gold_sql, "data_source": item.source,
            **extra_info(item, index)}  # fmt: skip


RowBuilder = Callable[[ExportItem, int], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class ExportFormat:
    name: str
    row: RowBuilder
    suffix: str
    description: str


FORMATS: dict[str, ExportFormat] = {
    f.name: f
    for f in (
        ExportFormat("verl", verl_row, ".parquet", "verl RLHFDataset parquet (agent_name selects the agent loop)"),
        ExportFormat("skyrl", skyrl_row, ".parquet", "SkyRL PromptDataset rows (env_class progress_sql)"),
        ExportFormat("trl", trl_row, ".jsonl", "TRL conversational prompts with the example's columns"),
    )
}


def get_format(name: str) -> ExportFormat:
    return lookup(FORMATS, name, "export format")


def build_rows(items: Sequence[ExportItem], fmt: ExportFormat) -> list[dict[str, Any]]:
    """The rows of ``items`` in order; ``extra_info.index`` is each row's position."""
    return [fmt.row(item, index) for index, item in enumerate(items)]


#: Characters that readers splitting on every line boundary (Python's ``str.splitlines``) take for
#: a line end; they only occur inside JSON strings, where their escapes mean the same.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_line(row: dict[str, Any]) -> str:
    """One JSON Lines record: UTF-8 text kept readable, every line-breaking character escaped.

    >>> line = json_line({"q": "caf\u00e9" + chr(0x2028)})
    >>> line.splitlines() == [line], line.endswith(chr(92) + 'u2028"}'), "caf\u00e9" in line
    (True, True, True)
    """
    return json.dumps(row, ensure_ascii=False).translate(_LINE_BREAKS)


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
                handle.write(json_line(row) + "\n")
    else:
        raise ConfigError(f"unknown output type {path.suffix or '(none)'} for {path}: use .parquet or .jsonl")
