"""Named comparison semantics (presets) and the one entry point that applies them.

``spider``, ``bird``, ``spider2`` and ``strict`` are documented, with behaviour tables, in
docs/semantics.md. Test-suite accuracy applies :func:`judge` on every suite database of a gold
(:meth:`progress_sql.judge.gold.GoldStore.suite_match`, :func:`progress_sql.evaluation.harness.evaluate`).

>>> preset = get_preset("spider", keep_distinct=True)
>>> describe(preset)
{'name': 'spider', 'options': {'keep_distinct': True, 'value_replacement': False}}
>>> from progress_sql.types import ExecResult
>>> gold = ExecResult("ok", columns=("a", "b"), rows=((1, "x"), (2, "y")))
>>> pred = ExecResult("ok", columns=("b", "a"), rows=(("y", 2), ("x", 1)))
>>> judge(preset, "SELECT a, b FROM t", [gold], pred).match
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from progress_sql.errors import ConfigError
from progress_sql.judge.presets.base import Equality, Preset, describe, judge
from progress_sql.judge.presets.bird import BirdPreset
from progress_sql.judge.presets.spider import SpiderPreset
from progress_sql.judge.presets.spider2 import Spider2Preset
from progress_sql.judge.presets.strict import StrictPreset
from progress_sql.registry import lookup

PRESETS: dict[str, Callable[..., Preset]] = {
    "spider": SpiderPreset,
    "bird": BirdPreset,
    "spider2": Spider2Preset,
    "strict": StrictPreset,
}


def get_preset(name: str, **options: Any) -> Preset:
    """The preset called ``name`` with ``options``; a clear ConfigError for unknown names or options."""
    factory = lookup(PRESETS, name, "preset")
    try:
        return factory(**options)
    except TypeError as error:
        raise ConfigError(f"bad options for preset {name!r}: {error}") from None


__all__ = ["PRESETS", "Equality", "Preset", "describe", "get_preset", "judge"]
