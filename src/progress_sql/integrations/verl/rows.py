"""The verl dataset row of one example, and the example back from a row.

verl's ``RLHFDataset`` reads a parquet file whose rows carry the chat prompt, the reward's ground
truth and free-form ``extra_info``; the agent loop receives each row as keyword arguments
(``raw_prompt`` = the prompt messages). ``agent_name`` selects our loop: without it verl runs its
default single-turn loop and silently ignores the refinement protocol. The row itself is built by
:func:`progress_sql.export.formats.verl_row`, the one builder ``progress-sql export`` also uses.

>>> from progress_sql.types import Example
>>> example = Example(7, "How many singers?", "music", "/data/music/music.sqlite", "SELECT count(*) FROM singer")
>>> row = verl_row(example, [{"role": "user", "content": "How many singers?"}], data_source="spider")
>>> row["agent_name"], row["reward_model"], row["extra_info"]["db_id"]
('progress_sql_agent', {'style': 'rule', 'ground_truth': 'SELECT count(*) FROM singer'}, 'music')
>>> example_from_row(row["extra_info"], row["reward_model"]) == example
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from progress_sql.errors import DatasetError
from progress_sql.export import formats
from progress_sql.prompts import Message
from progress_sql.types import Example

#: The ``agent_name`` of every row; ``agent_loops.yaml`` registers the loop under this name.
AGENT_NAME = formats.VERL_AGENT_NAME


def verl_row(
    example: Example, messages: Sequence[Message], *, data_source: str, index: int | None = None
) -> dict[str, Any]:
    """One parquet row in the shape verl 0.9.1's ``RLHFDataset`` and our agent loop read.

    ``data_source`` is what verl hands ``compute_score`` (``data.reward_fn_key``); ``messages`` are
    the opening system and user messages (``progress_sql.prompts.initial_messages``); ``index`` is the
    row's position in its file (the example's own index by default).
    """
    item = formats.ExportItem(example, data_source, tuple(messages), verified=True)
    return formats.verl_row(item, example.index if index is None else index)


def example_from_row(extra_info: Mapping[str, Any], reward_model: Mapping[str, Any]) -> Example:
    """The :class:`Example` a row was made from; a row without our fields is a :class:`DatasetError`."""
    missing = [key for key in ("index", "db_id", "db_path", "question") if key not in extra_info]
    if missing or "ground_truth" not in reward_model:
        absent = ", ".join([f"extra_info.{key}" for key in missing] or ["reward_model.ground_truth"])
        raise DatasetError(f"verl row lacks {absent}: write rows with progress-sql export --format verl")
    return Example(
        index=int(extra_info.get("source_index", extra_info["index"])),
        question=str(extra_info["question"]),
        db_id=str(extra_info["db_id"]),
        db_path=str(extra_info["db_path"]),
        gold_sql=str(reward_model["ground_truth"]),
        evidence=str(extra_info.get("evidence") or ""),
        difficulty=str(extra_info.get("difficulty") or "") or None,
    )
