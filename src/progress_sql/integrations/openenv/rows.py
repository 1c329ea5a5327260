"""The exported rows a server plays (``progress-sql export``): read once at start from a ``.jsonl`` or
``.parquet`` file, each checked by its format's own reader, so a malformed row fails when the server
starts rather than in the middle of a training run; and which row a reset plays (by index or seed)."""

from __future__ import annotations

import random
from typing import Any

#: The row shape read when the settings name none: the JSON Lines rows of ``export --format trl``.
DEFAULT_ROW_FORMAT = "trl"


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
