"""The refinement environment as a NeMo Gym resources server (nemo-gym 0.7.0). Two protocols of NeMo
Gym on one server, both over :class:`~progress_sql.integrations.hosted.HostedEpisode`:

- ``POST /verify`` (``SimpleResourcesServer``, used by ``simple_agent`` and rollout collection): the
  response's SQL scored as a one-answer episode; the reward, its components
  (``BaseMultiRewardVerifyResponse.reward_components``) and the turn's record with the ODT's findings.
- ``POST /reset`` and ``POST /step`` (``resources_servers.gymnasium.GymnasiumServer``, driven by
  ``gymnasium_agent``): the multi-turn episode, the ODT feedback as each step's observation, one
  episode per session cookie.

Settings are the server's config: ``profile`` and ``env_config`` (the :class:`EnvConfig` fields and
``step_rewards``, ``execution_workers``; docs/nemo-gym.md)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from fastapi import FastAPI, HTTPException
from nemo_gym.base_resources_server import (
    BaseMultiRewardVerifyResponse,
    BaseResourcesServerConfig,
    BaseRunRequest,
    BaseVerifyRequest,
    ReverifyMode,
    SimpleResourcesServer,
)
from nemo_gym.global_config import (
    DRY_RUN_KEY_NAME,
    HEAD_SERVER_KEY_NAME,
    NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME,
    NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME,
)
from nemo_gym.openai_utils import NeMoGymResponse
from omegaconf import OmegaConf
from pydantic import ConfigDict, Field, PrivateAttr

# NeMo Gym's bundled servers are a second top-level package of its wheel (not in pyproject's mypy overrides)
from resources_servers.gymnasium import GymnasiumServer, extract_text  # type: ignore[import-not-found, unused-ignore]

from progress_sql.errors import ConfigError, DatasetError
from progress_sql.integrations.hosted import (
    HostedEpisode,
    HostedStep,
    HostSettings,
    host_settings,
    load_rows,
    read_settings,
)
from progress_sql.integrations.nemo_gym.rows import nemo_gym_rows, row_task
from progress_sql.profiles import DEFAULT_PROFILE
from progress_sql.types import Example

__all__ = [
    "ProgressSQLResourcesServer",
    "ProgressSQLResourcesServerConfig",
    "ProgressSQLVerifyRequest",
    "ProgressSQLVerifyResponse",
    "launch_config",
    "serve",
]

#: The server's name in NeMo Gym's config (``<instance>.resources_servers.<SERVER_NAME>``).
SERVER_NAME = "progress_sql"
#: The instance key :func:`serve` gives the server in the global config it launches with.
INSTANCE_NAME = "progress_sql_resources_server"
#: ``failure_kind`` of an unscored answer, namespaced as NeMo Gym asks for kinds outside its vocabulary
#: (nemo_gym/failure_kinds.py); the suffix is the hosted episode's ``stop``.
FAILURE_KIND_PREFIX = "progress_sql:"

Result = TypeVar("Result")


class ProgressSQLResourcesServerConfig(BaseResourcesServerConfig):  # type: ignore[misc]
    """The server's config (``BaseResourcesServerConfig``'s fields and ours). ``env_config`` holds
    :class:`~progress_sql.env.core.EnvConfig` fields (nested sections as mappings) and the hosting keys
    ``step_rewards`` and ``execution_workers``; ``rows`` an exported file checked at start."""

    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS
    name: str = SERVER_NAME
    profile: str = DEFAULT_PROFILE
    env_config: dict[str, Any] = Field(default_factory=dict)
    rows: str | None = None


class ProgressSQLRunRequest(BaseRunRequest):  # type: ignore[misc]
    """A NeMo Gym row of ours (:mod:`progress_sql.integrations.nemo_gym.rows`): the request and the
    task's fields; the fields an example needs are required, so a row without them is FastAPI's 422."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    db_id: str
    db_path: str
    question: str
    gold_sql: str


class ProgressSQLVerifyRequest(ProgressSQLRunRequest, BaseVerifyRequest):  # type: ignore[misc]
    pass


class ProgressSQLVerifyResponse(BaseMultiRewardVerifyResponse):  # type: ignore[misc]
    """The answer's score: ``reward`` (the episode's total), ``reward_components`` (the reward's
    terms), ``match``, the execution status, the partial score ``f`` and the turn's record (``turn``:
    SQL, ODT verdict, tags and findings, reward breakdown). Unscored answers (a failing gold, a missing
    database) have reward 0, ``mask_sample`` and ``failure_kind`` ``progress_sql:gold_invalid`` or
    ``progress_sql:database_error``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    match: bool = False
    exec_status: str = ""
    f: float = 0.0
    turn: dict[str, Any] = Field(default_factory=dict)


def _reward_components(metadata: Mapping[str, Any]) -> dict[str, float]:
    reward = metadata.get("reward")
    components = reward.get("components") if isinstance(reward, Mapping) else None
    return {str(k): float(v) for k, v in (components or {}).items()}


def _failure(step: HostedStep) -> dict[str, Any]:
    """NeMo Gym's marks of an unscored step: the reward does not measure the model."""
    stop = step.metadata.get("stop")
    if not stop:
        return {}
    reason = step.metadata.get("gold_error") or step.metadata.get("database_error") or str(stop)
    return {"mask_sample": True, "failure_kind": FAILURE_KIND_PREFIX + str(stop), "failure_reason": reason}


def _task_fields(body: ProgressSQLRunRequest) -> dict[str, Any]:
    return dict(body.model_dump(exclude={"responses_create_params", "response"}, by_alias=False))


def _example(fields: Mapping[str, Any]) -> Example:
    """The row's example; a row that does not read (a missing field, a malformed ``task_spec``) is the
    client's error: FastAPI's error shape, status 422."""
    try:
        return row_task(fields)
    except DatasetError as error:
        raise HTTPException(status_code=422, detail=str(error)) from None


class ProgressSQLResourcesServer(GymnasiumServer):  # type: ignore[misc]
    """``/verify`` scores one answer; ``/reset`` and ``/step`` host a multi-turn episode per session.
    Episodes run on a thread pool as large as the execution pool, so a slow query holds one thread
    and one execution worker while the event loop keeps answering the others."""

    ray_enabled: ClassVar[bool | None] = False
    config: ProgressSQLResourcesServerConfig

    _settings: HostSettings = PrivateAttr()
    _answer_settings: HostSettings = PrivateAttr()
    _threads: ThreadPoolExecutor = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        given = {"profile": self.config.profile, **self.config.env_config}
        self._settings = host_settings(given)  # a bad key or value fails here, before serving
        self._answer_settings = host_settings(given, max_turns=1)
        if self.config.rows:
            nemo_gym_rows(load_rows(self.config.rows), where=self.config.rows)
        self._threads = ThreadPoolExecutor(self._settings.execution_workers, thread_name_prefix="progress-sql")

    def setup_webserver(self) -> FastAPI:
        # SimpleResourcesServer's app (/verify, /seed_session, /close_session, /aggregate_metrics) with
        # GymnasiumServer's episode routes: GymnasiumServer's own app has no /verify.
        app: FastAPI = SimpleResourcesServer.setup_webserver(self)
        app.post("/reset")(self._reset_endpoint)
        app.post("/step")(self._step_endpoint)
        return app

    async def _in_thread(self, work: Callable[[], Result]) -> Result:
        return await asyncio.get_running_loop().run_in_executor(self._threads, work)

    async def verify(self, body: ProgressSQLVerifyRequest) -> ProgressSQLVerifyResponse:
        fields = _task_fields(body)
        example, text = _example(fields), extract_text(body.response)

        def score() -> HostedStep:
            episode = HostedEpisode(self._answer_settings, example, fields)
            episode.start()
            return episode.step(text)

        step = await self._in_thread(score)
        metadata = step.metadata
        return ProgressSQLVerifyResponse(
            **body.model_dump(),
            reward=step.reward,
            reward_components=_reward_components(metadata),
            match=bool(metadata.get("match", False)),
            exec_status=str(metadata.get("exec_status", "")),
            f=float(metadata.get("f", 0.0)),
            turn=metadata,
            **_failure(step),
        )

    async def reset(self, metadata: dict[str, Any], session_id: str | None = None) -> tuple[str | None, dict[str, Any]]:
        """Start the session's episode; the row's prompt (the environment's opening) is the model's
        first input, so no observation is added."""
        example = _example(metadata)
        episode = HostedEpisode(self._settings, example, metadata)
        await self._in_thread(episode.start)
        self.session_state[str(session_id)] = episode
        return None, {"db_id": example.db_id, "max_turns": episode.max_turns, **episode.marks()}

    async def step(
        self, action: NeMoGymResponse, metadata: dict[str, Any], session_id: str | None = None
    ) -> tuple[str | None, float, bool, bool, dict[str, Any]]:
        """One model turn: the ODT feedback as the observation until the episode ends. The episode
        ends ``terminated`` on a match or an unscored row, ``truncated`` when the turn budget runs out."""
        episode = self.session_state.get(str(session_id))
        if not isinstance(episode, HostedEpisode):
            raise HTTPException(status_code=409, detail="no episode in this session: POST /reset first")
        step = await self._in_thread(lambda: episode.step(extract_text(action)))
        info = dict(step.metadata)
        info.update(_failure(step))
        if step.done:
            info["episode"] = episode.metrics()
            # a finished episode is let go: a long training run opens millions of sessions
            self.session_state.pop(str(session_id), None)
        terminated = step.done and bool(info.get("match") or info.get("stop"))
        observation = None if step.observation is None else str(step.observation["content"])
        return observation, step.reward, terminated, step.done and not terminated, info


def launch_config(
    rows: Path | None, *, host: str, port: int, settings: Mapping[str, Any], head_port: int | None = None
) -> dict[str, Any]:
    """The global config NeMo Gym's launcher hands a resources server process (``NEMO_GYM_CONFIG_DICT``)
    for this server alone: the head server's address (not contacted by a resources server) and the
    server's instance config with ``settings`` split into ``profile`` and ``env_config``."""
    given = dict(settings)
    profile = str(given.pop("profile", None) or DEFAULT_PROFILE)
    host_settings({"profile": profile, **given})  # fail on a bad setting before any server starts
    instance: dict[str, Any] = {
        "entrypoint": "app.py",
        "host": host,
        "port": int(port),
        "profile": profile,
        "env_config": given,
    }
    if rows is not None:
        instance["rows"] = str(Path(rows).resolve())
    return {
        HEAD_SERVER_KEY_NAME: {"host": host, "port": int(head_port if head_port is not None else port + 1)},
        DRY_RUN_KEY_NAME: False,
        INSTANCE_NAME: {"resources_servers": {SERVER_NAME: instance}},
    }


def serve(rows: Path, *, host: str, port: int, settings: Mapping[str, Any]) -> None:
    """Serve the environment at ``host:port`` until interrupted, through NeMo Gym's own server start
    (``SimpleServer.run_webserver``: its middleware, FastAPI's validation errors, uvicorn). The rows
    (any ``progress-sql export`` format) are checked first. NeMo Gym reads its config from the
    process's environment, as its launcher sets it for each server process, so this sets
    ``NEMO_GYM_CONFIG_DICT`` and ``NEMO_GYM_CONFIG_PATH`` for this process."""
    if not Path(rows).is_file():
        raise ConfigError(f"rows: no file {rows} (write one with progress-sql export)")
    config = launch_config(rows, host=host, port=port, settings=settings)
    os.environ[NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME] = OmegaConf.to_yaml(OmegaConf.create(config))
    os.environ[NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME] = INSTANCE_NAME
    ProgressSQLResourcesServer.run_webserver()


def main(argv: list[str] | None = None) -> int:
    """``python -m progress_sql.integrations.nemo_gym.server ROWS [--host H] [--port P] [--settings F]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m progress_sql.integrations.nemo_gym.server",
        description="Serve the Progress-SQL environment as a NeMo Gym resources server.",
    )
    parser.add_argument("rows", type=Path, help="rows written by progress-sql export (any format)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--settings", help="a .json or .yaml mapping: profile, EnvConfig fields, "
                        "step_rewards, execution_workers")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        serve(args.rows, host=args.host, port=args.port, settings=read_settings(args.settings))
    except (ConfigError, DatasetError) as error:
        print(f"error: {error}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
