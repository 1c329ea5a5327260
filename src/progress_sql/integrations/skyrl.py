"""SkyRL integration: the refinement environment as a skyrl-gym ``BaseTextEnv`` over the rows of
``progress-sql export --format skyrl`` (extra ``[skyrl]``); each step's metadata is the turn's
:class:`~progress_sql.env.records.TurnRecord`. Settings: docs/export.md#the-skyrl-environment; the
trainer's entry point (``trainer.override_entrypoint``): :mod:`progress_sql.integrations.skyrl_entrypoint`,
whose skyrl-free parts (:func:`entry_settings`, :func:`run_registered`) live here."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from progress_sql.env.core import EnvConfig, SQLRefineEnv, shared_store
from progress_sql.env.records import TurnRecord
from progress_sql.env.settings import env_config_from_profile
from progress_sql.errors import ConfigError, DatasetError, GoldQueryError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import SKYRL_ENV_CLASS, row_env_config, skyrl_example
from progress_sql.judge.cache import GoldCache
from progress_sql.profiles import DEFAULT_PROFILE

ENTRY_POINT = "progress_sql.integrations.skyrl:ProgressSQLEnv"
#: SkyRL's default number of threads that step environments (``environment.skyrl_gym.max_env_workers``,
#: skyrl@0.4.0 skyrl/train/config/config.py:1422): the pool size when nothing says otherwise.
DEFAULT_STEPPING_THREADS = 32
#: The key of the environment settings that names a JSON or YAML file of further settings.
SETTINGS_FILE_KEY = "settings_file"
#: Settings of this adapter that are not :class:`EnvConfig` fields.
ADAPTER_KEYS = ("step_rewards", "execution_workers")

_pools: dict[int, ExecutionPool] = {}
_pools_lock = threading.Lock()
_cache = GoldCache()


@dataclass(frozen=True, slots=True)
class SkyRLEnvSettings:
    """What one environment runs with: the episode's :class:`EnvConfig`, whether each step gets the
    change of the reward so far (``step_rewards``), and the size of the process's execution pool."""

    config: EnvConfig
    step_rewards: bool
    execution_workers: int


def _env_for(settings: SkyRLEnvSettings) -> SQLRefineEnv:
    """The only place this adapter builds an environment: on the one gold store for this config over
    the process's pool of that size and the process's gold cache."""
    pool = execution_pool(settings.execution_workers)
    return SQLRefineEnv(settings.config, store=shared_store(settings.config, pool=pool, cache=_cache))


def execution_pool(workers: int) -> ExecutionPool:
    """The process's execution pool with ``workers`` workers (made on first use). SkyRL makes every
    environment on its event-loop thread and steps them on up to ``max_env_workers`` threads
    (skyrl@0.4.0 skyrl/train/generators/skyrl_gym_generator.py:200-203, 397, 549): one pool of as many
    workers serves them all, so one slow query holds up one worker, not the other trajectories.
    Workers start when first needed."""
    with _pools_lock:
        pool = _pools.get(workers)
        if pool is None or pool.closed:
            pool = _pools[workers] = ExecutionPool(workers=workers)
        return pool


def close_pools() -> None:
    """Stop every execution worker the environments of this process started."""
    with _pools_lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


def settings(env_config: Any, extras: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> SkyRLEnvSettings:
    """The environment's settings: the profile's (``profile``, default progress-sql; docs/profiles.md),
    ``defaults`` (given at registration), then SkyRL's env_config, then the turn budget SkyRL puts in
    the extras."""
    given: dict[str, Any] = dict(defaults or {})
    if isinstance(env_config, Mapping):
        given.update(env_config.items())
    elif env_config is not None:
        given.update(vars(env_config))
    profile = str(given.pop("profile", None) or DEFAULT_PROFILE)
    step_rewards = bool(given.pop("step_rewards", False))
    workers = int(given.pop("execution_workers", None) or DEFAULT_STEPPING_THREADS)
    if workers < 1:
        raise ConfigError(f"execution_workers must be >= 1, got {workers}")
    if extras.get("max_turns") is not None:
        given["max_turns"] = int(extras["max_turns"])
    config = env_config_from_profile(profile, given, source="progress_sql env_config")
    return SkyRLEnvSettings(config, step_rewards, workers)


def load_settings_file(path: str | Path) -> dict[str, Any]:
    """The environment settings in a ``.json``, ``.yaml`` or ``.yml`` file (one mapping)."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{SETTINGS_FILE_KEY}: no file {file}")
    text = file.read_text(encoding="utf-8")
    if file.suffix in (".yaml", ".yml"):
        import yaml  # type: ignore[import-untyped, unused-ignore]  # SkyRL's config module needs pyyaml

        loaded = yaml.safe_load(text)
    elif file.suffix == ".json":
        loaded = json.loads(text)
    else:
        raise ConfigError(f"{SETTINGS_FILE_KEY}: {file} is neither .json nor .yaml/.yml")
    if not isinstance(loaded, Mapping):
        raise ConfigError(f"{SETTINGS_FILE_KEY}: {file} holds {type(loaded).__name__}, not a mapping of settings")
    return dict(loaded)


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


def _missing_database(db_path: str) -> str:
    return f"database not found: {db_path} (the row is unverified: put the database there or export without it)"


class ProgressSQLEnv(BaseTextEnv):  # type: ignore[misc]
    """One refinement episode per instance (SkyRL makes one environment per trajectory)."""

    def __init__(
        self,
        env_config: Any = None,
        extras: Mapping[str, Any] | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        extras = extras or {}
        given = settings(env_config, extras, defaults)
        # a row exported with --suite carries its test suite; the settings' own suite wins
        self.settings = replace(given, config=row_env_config(given.config, extras))
        self.config, self.step_rewards = self.settings.config, self.settings.step_rewards
        self.example = skyrl_example(extras)
        # A database missing on this node is recorded, not raised: SkyRL's agent_loop has no except
        # around make/init/step, so one raise here would end the whole generation step.
        self.database_error = "" if Path(self.example.db_path).is_file() else _missing_database(self.example.db_path)
        self.gold_error = ""
        self.max_turns = self.config.max_turns
        self.env = _env_for(self.settings)
        self._reward_so_far = 0.0
        self._last: TurnRecord | None = None

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Prepare the gold; the exported prompt is the environment's own, so it is returned as given
        (or built when empty). A gold that fails or times out (``gold_error`` in the metadata) or a
        database this node cannot open (``database_error``) makes the episode end at the first step
        with reward 0 instead of raising."""
        self.turns = 0
        self.asks = 0
        self._reward_so_far = 0.0
        self.gold_error = ""
        messages: list[Any] = []
        if not self.database_error:
            try:
                messages = self.env.reset(self.example)
            except GoldQueryError as error:  # one bad row must not end a long training run
                self.gold_error = str(error)
            except DatasetError as error:  # nor one node without (or with a broken) database
                self.database_error = str(error)
        opening = list(prompt) if prompt else [{"role": m["role"], "content": m["content"]} for m in messages]
        return opening, {"db_id": self.example.db_id, "max_turns": self.max_turns, **self._unscored_marks()}

    def _unscored_marks(self) -> dict[str, str]:
        # verl's names (integrations/verl/reward.py GOLD_ERROR_KEY, DATABASE_ERROR_KEY), without its prefix
        return {"gold_error": self.gold_error, "database_error": self.database_error}

    def _unscored_step(self) -> BaseTextEnvStepOutput:
        """The one step of an episode that cannot be scored: reward 0, done, the reason in the metadata
        (``stop`` as verl's agent loop names it: gold_invalid or database_error)."""
        stop = "gold_invalid" if self.gold_error else "database_error"
        return BaseTextEnvStepOutput(
            observations=[],
            reward=0.0,
            done=True,
            metadata={**self._unscored_marks(), "stop": stop},
            postprocessed_action=None,
        )

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        if self.gold_error or self.database_error:  # nothing to compare with or run on
            return self._unscored_step()
        result = self.env.step(action)
        self._last = result.info
        self.asks += result.info.action == "ask"
        done = result.terminated or result.truncated
        if self.step_rewards:
            total = result.reward if done else self._prefix_reward()
            reward, self._reward_so_far = total - self._reward_so_far, total
        else:
            reward = result.reward
        observations = [] if result.observation is None else [dict(result.observation)]
        return BaseTextEnvStepOutput(
            observations=observations,
            reward=float(reward),
            done=done,
            metadata=result.info.to_dict(),
            postprocessed_action=None,
        )

    def _prefix_reward(self) -> float:
        # The environment's own scoring of the episode so far: its answers plus the task terms of
        # clarifying questions and write checks, so the step rewards add up to the episode's.
        return float(self.env.episode_reward().total)

    def get_metrics(self) -> dict[str, Any]:
        trajectory = self.env.trajectory
        last = self._last
        return {
            "turns": len(trajectory.turns),  # answers: a clarifying question is counted in asks
            "asks": self.asks,
            "match": bool(last is not None and last.match),
            "k_star": trajectory.k_star or 0,
            "reward": last.reward.total if last is not None and last.reward is not None else 0.0,
        }


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
