"""Judging predictions: the gold oracle (:class:`~progress_sql.judge.gold.GoldStore`: gold results, their
cache, the ODT analysis processes), the comparison semantics (named presets, ``judge``) and write
verdicts. Running SQL is :mod:`progress_sql.execution`'s; this package decides what a result means."""

from __future__ import annotations

from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import PRESETS, Preset, get_preset, judge
from progress_sql.judge.gold import GoldStore, PreparedGold

__all__ = ["PRESETS", "GoldCache", "GoldStore", "PreparedGold", "Preset", "get_preset", "judge"]
