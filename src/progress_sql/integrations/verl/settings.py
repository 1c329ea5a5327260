"""What the verl loop and reward read from verl's configuration, importable without verl (the recipes'
tests compose them in the main environment): the profile (``progress_sql.profiles``) and the loop's
environment.

The profile is one key, ``reward.custom_reward_function.reward_kwargs.profile``, which the reward reads
from its keyword arguments and the loop from the trainer's configuration, so the two cannot disagree;
``profile:`` in ``agent_loops.yaml`` names it there instead (both given and different: an error).

>>> config = {"reward": {"custom_reward_function": {"reward_kwargs": {"profile": "paper"}}}}
>>> loop_profile(None, config)
'paper'
>>> loop_env_config({"timeout_s": 10.0}, "paper").odt.verdict
'syntax'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from progress_sql.env.core import EnvConfig
from progress_sql.env.settings import env_config_from_profile
from progress_sql.errors import ConfigError
from progress_sql.profiles import DEFAULT_PROFILE, get_profile

#: Where in verl's configuration the reward's keyword arguments are.
REWARD_KWARGS = ("reward", "custom_reward_function", "reward_kwargs")


def reward_kwargs(trainer_config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The reward's keyword arguments in verl's configuration (empty: none given)."""
    found: Any = trainer_config
    for key in REWARD_KWARGS:
        found = found.get(key) if isinstance(found, Mapping) or hasattr(found, "get") else None
        if found is None:
            return {}
    return found  # type: ignore[no-any-return]


def loop_profile(given: str | None, trainer_config: Mapping[str, Any]) -> str:
    """The loop's profile: ``agent_loops.yaml``'s ``profile`` (``given``), else the reward's
    (``reward_kwargs.profile``), else the default; both given and different is a ConfigError."""
    from_reward = reward_kwargs(trainer_config).get("profile")
    if given is not None and from_reward is not None and given != from_reward:
        raise ConfigError(
            f"agent_loops.yaml names profile {given}, reward_kwargs.profile {from_reward}: the loop and the "
            "reward would score differently; name one"
        )
    return get_profile(given or from_reward or DEFAULT_PROFILE).name


def loop_env_config(settings: Mapping[str, Any], profile: str = DEFAULT_PROFILE) -> EnvConfig:
    """The environment of the loop: the profile's, the ``agent_loops.yaml`` keys (``settings``) on top;
    the prompt comes from the row, so the environment renders no schema (``schema_profile`` none)."""
    config = env_config_from_profile(profile, settings, source="agent_loops.yaml")
    return replace(config, schema_profile="none")
