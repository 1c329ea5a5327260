"""The one look-up every name registry uses (presets, rewards, backends, trainer presets, model sizes).

>>> lookup({"grpo": 1, "gspo": 2}, "gspo", "trainer preset")
2
>>> lookup({"grpo": 1}, "ppo", "trainer preset")
Traceback (most recent call last):
...
progress_sql.errors.ConfigError: unknown trainer preset 'ppo'; choose one of grpo
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from progress_sql.errors import ConfigError

T = TypeVar("T")


def lookup(registry: Mapping[str, T], name: str, what: str) -> T:
    """``registry[name]``, or a ConfigError that lists the names the user can choose."""
    try:
        return registry[name]
    except KeyError:
        raise ConfigError(f"unknown {what} {name!r}; choose one of {', '.join(sorted(registry))}") from None
