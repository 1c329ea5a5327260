"""The exported rows a server plays (``progress-sql export``): read once at start from a ``.jsonl`` or
``.parquet`` file, each checked by its format's own reader, so a malformed row fails when the server
starts rather than in the middle of a training run; and which row a reset plays (by index or seed)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from progress_sql.errors import DatasetError
from progress_sql.export.formats import get_format
from progress_sql.prompts import Message
from progress_sql.types import Example

#: The row shape read when the settings name none: the JSON Lines rows of ``export --format trl``.
DEFAULT_ROW_FORMAT = "trl"


@dataclass(frozen=True, slots=True)
class ExportedRow:
    """One exported row and the example its format's reader made of it."""

    example: Example
    fields: Mapping[str, Any]

    @property
    def prompt(self) -> list[Message]:
        """The opening messages as exported (empty when the row has none)."""
        messages = self.fields.get("prompt")
        if not isinstance(messages, list):
            return []
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def read_rows(rows: Sequence[Mapping[str, Any]], row_format: str, *, where: str) -> tuple[ExportedRow, ...]:
    """Each row with its example, read by ``row_format``'s reader; an error names the row's number."""
    reader = get_format(row_format).example
    read = []
    for number, fields in enumerate(rows, start=1):
        try:
            read.append(ExportedRow(reader(fields), fields))
        except DatasetError as error:
            raise DatasetError(f"{where}, row {number}: {error} (is it a {row_format} row?)") from None
    if not read:
        raise DatasetError(f"{where} holds no rows")
    return tuple(read)


def chosen_index(count: int, *, index: Any = None, seed: int | None = None) -> int:
    """The position of the row a reset plays: ``index`` when given (a row's position in the file,
    which is ``extra_info.index`` of an export), else one drawn from ``seed`` (the same seed, the same
    row), else one drawn at random.

    >>> chosen_index(5, index=3), chosen_index(5, seed=7) == chosen_index(5, seed=7)
    (3, True)
    """
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int):
            raise ValueError(f"index must be an integer, got {index!r}")
        if not 0 <= index < count:
            raise ValueError(f"index {index} is outside the {count} rows (0 to {count - 1})")
        return index
    return random.Random(seed).randrange(count)  # seed None: the system's entropy
