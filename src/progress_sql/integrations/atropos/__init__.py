"""Atropos integration (extra ``[atropos]``, its own environment: docs/atropos.md): the refinement
environment as an atroposlib ``BaseEnv`` over the rows of ``progress-sql export``; run it with
Atropos's own command line, ``python -m progress_sql.integrations.atropos serve|process|evaluate``."""

from progress_sql.integrations.atropos.env import (
    PlayedEpisode,
    ProgressSQLAtroposConfig,
    ProgressSQLAtroposEnv,
    episode_marks,
    scored_item,
)
from progress_sql.integrations.atropos.rows import RowItem, read_items

__all__ = [
    "PlayedEpisode",
    "ProgressSQLAtroposConfig",
    "ProgressSQLAtroposEnv",
    "RowItem",
    "episode_marks",
    "read_items",
    "scored_item",
]
