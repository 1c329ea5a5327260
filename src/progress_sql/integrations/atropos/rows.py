"""The exported rows an Atropos environment draws its items from (``progress-sql export``): read by the
hosted frameworks' one reader (:func:`~progress_sql.integrations.hosted.load_rows`), each checked once
at setup by its format's own reader, so a malformed row fails before the first group rather than
inside a worker."""

from __future__ import annotations

from pathlib import Path

from progress_sql.export.formats import FORMATS
from progress_sql.integrations.hosted import ExportedRow, read_export

#: The row shapes an Atropos environment reads: every format ``progress-sql export`` writes.
ROW_FORMATS: tuple[str, ...] = tuple(FORMATS)


#: One item of the environment (Atropos's ``Item``): an exported row and its example.
RowItem = ExportedRow


def read_items(path: str | Path, row_format: str) -> list[RowItem]:
    """The items of an exported rows file."""
    return list(read_export(path, row_format))
