"""The refinement environment as an OpenEnv ``Environment`` (openenv-core 0.3.0,
openenv/core/env_server/interfaces.py:98): one instance per WebSocket session (OpenEnv's server makes
one per session and steps it on that session's own thread), each reset plays one exported row as a
:class:`~progress_sql.integrations.hosted.HostedEpisode`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from progress_sql import __version__
from progress_sql.integrations.hosted import ExportedRow, HostedEpisode, HostSettings
from progress_sql.integrations.openenv.models import SQLAction, SQLObservation, SQLState
from progress_sql.integrations.openenv.rows import chosen_index

#: The name the server reports (``GET /metadata``).
ENVIRONMENT_NAME = "progress_sql"
#: The reset keywords beyond OpenEnv's own ``seed`` and ``episode_id``.
RESET_KEYS = ("index",)


@dataclass(frozen=True, slots=True)
class ServedRows:
    """What every session of one server plays: the exported rows and the episodes' settings."""

    rows: tuple[ExportedRow, ...]
    settings: HostSettings


class ProgressSQLEnvironment(Environment[SQLAction, SQLObservation, SQLState]):  # type: ignore[misc]
    """Reset plays a row (``index``, or one drawn from ``seed``); each step scores one model reply and
    answers with the next user message (ODT feedback), the reward and the turn's record. A failing gold
    or a missing database is an unscored episode (its first step ends it with reward 0 and the reason),
    and a model's mistakes are turn records; only a request that breaks the protocol (a step before
    reset or after the end, an unknown reset keyword, an index outside the rows) is an error."""

    # Sessions share nothing mutable but the process's execution pool and gold store, which are
    # made for many concurrent episodes (integrations/hosted.py).
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, served: ServedRows) -> None:
        super().__init__()
        self.served = served
        self.episode: HostedEpisode | None = None
        self._state = SQLState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> SQLObservation:
        unknown = sorted(set(kwargs) - set(RESET_KEYS))
        if unknown:
            raise ValueError(f"unknown reset keywords: {', '.join(unknown)} (known: seed, episode_id, index)")
        rows = self.served.rows
        index = chosen_index(len(rows), index=kwargs.get("index"), seed=seed)
        row = rows[index]
        episode = HostedEpisode(self.served.settings, row.example, row.fields)
        # the episode's own opening; an unscored episode has none, so the model sees the exported one
        # and its reply is answered with reward 0 and the reason
        messages = [dict(m) for m in episode.start()] or [dict(m) for m in row.prompt]
        self.episode = episode
        self._state = SQLState(
            episode_id=episode_id or str(uuid.uuid4()),
            step_count=0,
            index=index,
            db_id=row.example.db_id,
            max_turns=episode.max_turns,
        )
        return SQLObservation(messages=messages, episode=self._episode_fields(), done=False, reward=None)

    def step(self, action: SQLAction, timeout_s: float | None = None, **kwargs: Any) -> SQLObservation:
        """Score ``action``. ``timeout_s`` (OpenEnv's per-request limit) is not used: each query runs
        under the settings' ``timeout_s`` in the execution pool, which is what bounds a step."""
        episode = self.episode
        if episode is None:
            raise ValueError("step before reset: reset the environment to start an episode")
        if self._state.done:
            raise ValueError("the episode is over: reset to play another row")
        step = episode.step(action.response)
        self._state.step_count += 1
        self._state.done = step.done
        metrics = episode.metrics() if step.done else {}
        self._state.metrics = episode.metrics()
        return SQLObservation(
            messages=[] if step.observation is None else [dict(step.observation)],
            record=step.metadata,
            episode=self._episode_fields(),
            metrics=metrics,
            done=step.done,
            reward=step.reward,
            metadata=step.metadata,
        )

    @property
    def state(self) -> SQLState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=ENVIRONMENT_NAME,
            description=(
                "Progress-SQL: multi-turn Text-to-SQL refinement with ODT clause feedback and a progressive "
                f"reward over {len(self.served.rows)} exported rows"
            ),
            version=__version__,
            documentation_url="docs/openenv.md",
        )

    def _episode_fields(self) -> dict[str, Any]:
        episode = self.episode
        if episode is None:
            return {}
        return {
            "index": self._state.index,
            "db_id": self._state.db_id,
            "max_turns": self._state.max_turns,
            **episode.marks(),
        }
