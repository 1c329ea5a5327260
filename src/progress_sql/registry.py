"""The one look-up every name registry uses (presets, rewards, backends, trainer presets, model sizes).

>>> lookup({"grpo": 1, "gspo": 2}, "gspo", "trainer preset")
2
>>> lookup({"grpo": 1}, "ppo", "trainer preset")
Traceback (most recent call last):
...
progress_sql.errors.ConfigError: unknown trainer preset 'ppo'; choose one of grpo

A registry can keep an entry's former name as an alias, so that old commands and files keep working:

>>> lookup({"no-decay": 1}, "no-late", "ablation arm", aliases={"no-late": "no-decay"})
1
>>> lookup({"no-decay": 1}, "late", "arm", aliases={"no-late": "no-decay"})
Traceback (most recent call last):
...
progress_sql.errors.ConfigError: unknown arm 'late'; choose one of no-decay (or no-late, the former name of no-decay)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from progress_sql.errors import ConfigError

T = TypeVar("T")


def lookup(registry: Mapping[str, T], name: str, what: str, *, aliases: Mapping[str, str] | None = None) -> T:
    """``registry[name]`` (``name`` may be a former name listed in ``aliases``, former -> current), or a
    ConfigError that lists the names the user can choose."""
    aliases = aliases or {}
    try:
        return registry[aliases.get(name, name)]
    except KeyError:
        former = "".join(f" (or {old}, the former name of {new})" for old, new in sorted(aliases.items()))
        raise ConfigError(f"unknown {what} {name!r}; choose one of {', '.join(sorted(registry))}{former}") from None
