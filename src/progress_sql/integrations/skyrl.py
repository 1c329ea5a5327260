"""SkyRL integration: the refinement environment as a skyrl-gym ``BaseTextEnv`` over the rows of
``progress-sql export --format skyrl`` (extra ``[skyrl]``); each step's metadata is the turn's
:class:`~progress_sql.env.records.TurnRecord`. Settings: docs/export.md#the-skyrl-environment; the
trainer's entry point (``trainer.override_entrypoint``): :mod:`progress_sql.integrations.skyrl_entrypoint`,
whose skyrl-free parts (:func:`entry_settings`, :func:`run_registered`) live here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from progress_sql.errors import ConfigError
from progress_sql.export.formats import SKYRL_ENV_CLASS, skyrl_example
from progress_sql.integrations.hosted import (
    DEFAULT_EXECUTION_WORKERS,
    HostedEpisode,
    HostSettings,
    close_pools,
    host_settings,
    read_settings_file,
)

__all__ = ["ProgressSQLEnv", "close_pools", "entry_settings", "register_env", "run_registered", "settings"]

ENTRY_POINT = "progress_sql.integrations.skyrl:ProgressSQLEnv"
#: The key of the environment settings that names a JSON or YAML file of further settings.
SETTINGS_FILE_KEY = "settings_file"
#: SkyRL's default number of threads that step environments: the pool size when nothing says otherwise.
DEFAULT_STEPPING_THREADS = DEFAULT_EXECUTION_WORKERS


def settings(env_config: Any, extras: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> HostSettings:
    """The environment's settings: the profile's (``profile``, default progress-sql; docs/profiles.md),
    ``defaults`` (given at registration), then SkyRL's env_config, then the turn budget SkyRL puts in
    the extras."""
    given: dict[str, Any] = dict(defaults or {})
    if isinstance(env_config, Mapping):
        given.update(env_config.items())
    elif env_config is not None:
        given.update(vars(env_config))
    max_turns = extras.get("max_turns")
    return host_settings(given, max_turns=None if max_turns is None else int(max_turns))


def load_settings_file(path: str | Path) -> dict[str, Any]:
    """The environment settings in a ``.json``, ``.yaml`` or ``.yml`` file (one mapping)."""
    return read_settings_file(path, what=SETTINGS_FILE_KEY)


def entry_settings(section: Mapping[str, Any], stepping_threads: int) -> dict[str, Any]:
    """The settings every environment of a SkyRL run gets (the ``env_config`` SkyRL's generator passes
    to ``skyrl_gym.make``): those of the file that ``section[SETTINGS_FILE_KEY]`` names, then the
    section's own keys (the command line wins), and an execution pool as large as SkyRL's stepping
    threads (``max_env_workers``) unless ``execution_workers`` says otherwise. Checked here, so a bad
    key fails before Ray and the models start."""
    given = dict(section)
    named = given.pop(SETTINGS_FILE_KEY, None)
    merged = {**(load_settings_file(named) if named else {}), **given}
    merged.pop(SETTINGS_FILE_KEY, None)
    merged.setdefault("execution_workers", max(1, int(stepping_threads)))
    settings(merged, {})
    return merged


def run_registered(run: Callable[[], Any], env_id: str = SKYRL_ENV_CLASS) -> Any:
    """Inside the Ray task that builds SkyRL's generator: register the environment there (the
    registry is per process, and the task runs in a Ray worker), then run the experiment."""
    register_env(env_id)
    return run()


class ProgressSQLEnv(BaseTextEnv):  # type: ignore[misc]
    """One refinement episode per instance (SkyRL makes one environment per trajectory), hosted by
    :class:`~progress_sql.integrations.hosted.HostedEpisode`."""

    def __init__(
        self,
        env_config: Any = None,
        extras: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        extras = extras or {}
        # a row exported with --suite carries its test suite; the settings' own suite wins
        self.episode = HostedEpisode(settings(env_config, extras, defaults), skyrl_example(extras), extras)
        self.settings, self.config = self.episode.settings, self.episode.config
        self.step_rewards = self.settings.step_rewards
        self.example = self.episode.example
        self.max_turns = self.config.max_turns
        self.env = self.episode.env

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Prepare the gold; the exported prompt is the environment's own, so it is returned as given
        (or built when empty). A gold that fails or times out (``gold_error`` in the metadata) or a
        database this node cannot open (``database_error``) makes the episode end at the first step
        with reward 0 instead of raising."""
        self.turns = 0
        messages = self.episode.start()
        opening = list(prompt) if prompt else [{"role": m["role"], "content": m["content"]} for m in messages]
        return opening, {"db_id": self.example.db_id, "max_turns": self.max_turns, **self.episode.marks()}

    @property
    def gold_error(self) -> str:
        return self.episode.gold_error

    @property
    def database_error(self) -> str:
        return self.episode.database_error

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        step = self.episode.step(action)
        return BaseTextEnvStepOutput(
            observations=[] if step.observation is None else [dict(step.observation)],
            reward=step.reward,
            done=step.done,
            metadata=step.metadata,
            postprocessed_action=None,
        )

    def get_metrics(self) -> dict[str, Any]:
        return self.episode.metrics()


def register_env(env_id: str = SKYRL_ENV_CLASS, **defaults: Any) -> None:
    """Register :class:`ProgressSQLEnv` with skyrl-gym under ``env_id`` (the exported rows'
    ``env_class``). ``defaults`` are environment settings (the ``env_config`` keys) that SkyRL's own
    ``env_config`` may override. Registering the same id with the same settings again is a no-op.
    The entry point is a module path, so Ray workers import it by name."""
    settings({}, {}, defaults)  # unknown keys and bad values fail here, not in the first episode
    spec = skyrl_gym.registry.get(env_id)
    if spec is not None:
        if spec.entry_point != ENTRY_POINT or dict(spec.kwargs.get("defaults", {})) != defaults:
            raise ConfigError(f"skyrl-gym id {env_id!r} is already registered ({spec.entry_point}, {spec.kwargs})")
        return
    skyrl_gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"defaults": defaults})
