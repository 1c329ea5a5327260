"""SkyRL integration: the refinement environment as a skyrl-gym ``BaseTextEnv`` over the rows of
``progress-sql export --format skyrl`` (extra ``[skyrl]``); each step's metadata is the turn's
:class:`~progress_sql.env.records.TurnRecord`. Settings: docs/export.md#the-skyrl-environment."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from progress_sql.env.core import EnvConfig, SQLRefineEnv, shared_store
from progress_sql.env.records import TurnRecord
from progress_sql.env.settings import env_config_from_mapping
from progress_sql.errors import ConfigError, DatasetError, GoldQueryError
from progress_sql.execution.cache import GoldCache
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import SKYRL_ENV_CLASS, skyrl_example
from progress_sql.rewards.registry import RewardContext, get_reward

ENTRY_POINT = "progress_sql.integrations.skyrl:ProgressSQLEnv"

_local = threading.local()
_pools: list[ExecutionPool] = []
_pools_lock = threading.Lock()
_cache = GoldCache()


def _env_for(config: EnvConfig) -> SQLRefineEnv:
    """The only place this adapter builds an environment: on the one gold store for this config over
    the thread's pool and the process's gold cache."""
    return SQLRefineEnv(config, store=shared_store(config, pool=_thread_pool(), cache=_cache))


def _thread_pool() -> ExecutionPool:
    pool: ExecutionPool | None = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = ExecutionPool(workers=1)
        with _pools_lock:
            _pools.append(pool)
    return pool


def close_pools() -> None:
    """Stop every execution worker the environments of this process started."""
    with _pools_lock:
        for pool in _pools:
            pool.close()
        _pools.clear()
    _local.__dict__.pop("pool", None)


def settings(
    env_config: Any, extras: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> tuple[EnvConfig, bool]:
    """The :class:`EnvConfig` and the ``step_rewards`` switch: ``defaults`` (given at registration),
    then SkyRL's env_config, then the turn budget SkyRL puts in the extras."""
    given: dict[str, Any] = dict(defaults or {})
    if isinstance(env_config, Mapping):
        given.update(env_config.items())
    elif env_config is not None:
        given.update(vars(env_config))
    step_rewards = bool(given.pop("step_rewards", False))
    if extras.get("max_turns") is not None:
        given["max_turns"] = int(extras["max_turns"])
    return env_config_from_mapping(given, source="progress_sql env_config"), step_rewards


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
        self.config, self.step_rewards = settings(env_config, extras, defaults)
        self.example = skyrl_example(extras)
        if not Path(self.example.db_path).is_file():
            raise DatasetError(
                f"database not found: {self.example.db_path} (the row is unverified: put the database there "
                "or export without it)"
            )
        self.max_turns = self.config.max_turns
        self.env = _env_for(self.config)
        self._reward_so_far = 0.0
        self._last: TurnRecord | None = None

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Prepare the gold; the exported prompt is the environment's own, so it is returned as given
        (or built when empty). A gold that fails or times out (``gold_error`` in the metadata) makes
        the episode end at the first step with reward 0 instead of raising."""
        self.turns = 0
        self._reward_so_far = 0.0
        self.gold_error = ""
        try:
            messages = self.env.reset(self.example)
        except GoldQueryError as error:  # one bad row must not end a long training run
            self.gold_error = str(error)
            messages = []
        opening = list(prompt) if prompt else [{"role": m["role"], "content": m["content"]} for m in messages]
        return opening, {"db_id": self.example.db_id, "max_turns": self.max_turns, "gold_error": self.gold_error}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        if self.gold_error:  # nothing to compare with: the episode ends at once with reward 0
            return BaseTextEnvStepOutput(
                observations=[],
                reward=0.0,
                done=True,
                metadata={"gold_error": self.gold_error},
                postprocessed_action=None,
            )
        result = self.env.step(action)
        self._last = result.info
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
        context = RewardContext(self.example.gold_sql, progressive=self.config.progressive)
        return float(get_reward(self.config.reward).score(self.env.trajectory, context).total)

    def get_metrics(self) -> dict[str, Any]:
        trajectory = self.env.trajectory
        last = self._last
        return {
            "turns": len(trajectory.turns),
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
