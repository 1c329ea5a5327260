"""The exported rows an Atropos environment draws its items from (``progress-sql export``): read by the
hosted frameworks' one reader (:func:`~progress_sql.integrations.hosted.load_rows`), each checked once
at setup by its format's own reader, so a malformed row fails before the first group rather than
inside a worker."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.errors import DatasetError
from progress_sql.export.formats import FORMATS, get_format
from progress_sql.integrations.hosted import load_rows
from progress_sql.prompts import Message
from progress_sql.types import Example

#: The row shapes an Atropos environment reads: every format ``progress-sql export`` writes.
ROW_FORMATS: tuple[str, ...] = tuple(FORMATS)


@dataclass(frozen=True, slots=True)
class RowItem:
    """One item of the environment (Atropos's ``Item``): the exported row and its example."""

    example: Example
    row: Mapping[str, Any]

    @property
    def prompt(self) -> list[Message]:
        """The row's opening messages as exported (the environment's own opening)."""
        messages = self.row.get("prompt")
        if not isinstance(messages, list):
            return []
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def row_items(rows: list[dict[str, Any]], row_format: str, *, where: str) -> list[RowItem]:
    """Each row with its example, read by ``row_format``'s reader (``FORMATS[row_format].example``)."""
    reader = get_format(row_format).example
    items = []
    for number, row in enumerate(rows, start=1):
        try:
            items.append(RowItem(reader(row), row))
        except DatasetError as error:
            raise DatasetError(f"{where}, row {number}: {error} (is it a {row_format} row?)") from None
    if not items:
        raise DatasetError(f"{where} holds no rows")
    return items


def read_items(path: str | Path, row_format: str) -> list[RowItem]:
    """The items of an exported rows file."""
    return row_items(load_rows(path), row_format, where=str(path))
