"""``env_config_from_mapping``: an :class:`EnvConfig` from plain values, the one way every trainer
adapter reads its environment settings (docs/environment.md#sqlrefineenv, below the field table).

>>> config = env_config_from_mapping({"max_turns": 2, "progressive": {"gamma": 0.8}})
>>> config.max_turns, config.progressive.gamma, config.reward
(2, 0.8, 'progressive')

``env_config_from_profile``: the :class:`EnvConfig` of a named profile (``progress_sql.profiles``),
with any field overridden; ``progress-sql`` is ``EnvConfig()`` itself.

>>> config = env_config_from_profile("paper")
>>> config.reward, config.schema_profile, config.odt.verdict
('progressive-paper', 'ddl', 'syntax')
>>> env_config_from_profile("progress-sql") == EnvConfig()
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from progress_sql.env.core import EnvConfig
from progress_sql.env.protocols import get_protocol
from progress_sql.errors import ConfigError
from progress_sql.odt import OdtConfig
from progress_sql.odt.config import FeatureWeights
from progress_sql.profiles import get_profile
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.rewards.tasks import TaskTermsConfig

#: Every field of :class:`EnvConfig`, in declaration order.
ENV_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EnvConfig))


def _nested(kind: type[Any], value: Any, name: str, inner: Mapping[str, Callable[[Any], Any]] | None = None) -> Any:
    """``value`` as a ``kind`` (a mapping of its fields, or already one); ``inner`` converts fields."""
    if isinstance(value, kind) or not isinstance(value, Mapping):
        return value
    given = {key: (inner or {}).get(key, lambda v: v)(item) for key, item in value.items()}
    known = [f.name for f in fields(kind)]
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigError(f"unknown {name} keys: {', '.join(unknown)} ({kind.__name__} fields: {', '.join(known)})")
    return kind(**given)


def _odt(value: Any) -> Any:
    return _nested(OdtConfig, value, "odt", {"weights": lambda w: _nested(FeatureWeights, w, "odt.weights")})


def env_config_from_mapping(values: Mapping[str, Any], *, source: str = "EnvConfig") -> EnvConfig:
    """The :class:`EnvConfig` that ``values`` describe (see the module docstring); ``source`` names
    where they came from in the error."""
    unknown = [key for key in values if key not in ENV_FIELDS]
    if unknown:
        raise ConfigError(
            f"unknown {source} keys: {', '.join(sorted(unknown))} (EnvConfig fields: {', '.join(ENV_FIELDS)})"
        )
    given = dict(values)
    if "progressive" in given:
        given["progressive"] = _nested(ProgressiveConfig, given["progressive"], "progressive")
    if "odt" in given:
        given["odt"] = _odt(given["odt"])
    if "tasks" in given:
        given["tasks"] = _nested(TaskTermsConfig, given["tasks"], "tasks")
    if isinstance(given.get("preset_options"), Mapping):
        given["preset_options"] = dict(given["preset_options"])
    return EnvConfig(**given)


def env_config_from_profile(
    name: str, overrides: Mapping[str, Any] | None = None, *, source: str | None = None
) -> EnvConfig:
    """The :class:`EnvConfig` of profile ``name`` (every field it sets), ``overrides`` (plain values,
    as :func:`env_config_from_mapping` reads them) on top; ``source`` names the overrides in an error."""
    given = get_profile(name).env_fields() | dict(overrides or {})
    return env_config_from_mapping(given, source=source or f"profile {name}")


def env_config_from_options(profile: str, options: Mapping[str, Any]) -> EnvConfig:
    """A command's environment: profile ``profile``'s, with the options the user gave (``options`` by
    :class:`EnvConfig` field; None: not given, the profile's value stays) on top. Every command with
    ``--profile`` builds its environment here.

    A protocol named there (``env/protocols.py``) brings its defaults beneath the options given:

    >>> config = env_config_from_options("progress-sql", {"protocol": "skyrl", "preset": None})
    >>> config.max_turns, config.reward, config.preset
    (5, 'skyrl-sql', 'bird')

    >>> env_config_from_options("paper", {"schema_profile": None, "max_turns": 2}).schema_profile
    'ddl'
    """
    given = {key: value for key, value in options.items() if value is not None}
    defaults = get_protocol(given["protocol"]).defaults if "protocol" in given else {}
    return env_config_from_profile(profile, dict(defaults) | given)
