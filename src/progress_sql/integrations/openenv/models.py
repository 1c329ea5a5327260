"""The environment's OpenEnv types (openenv-core 0.3.0, openenv/core/env_server/types.py): what a step
sends, what comes back, and the session's state. Pydantic models, as OpenEnv requires: its server
validates each action with ``model_validate`` and its base classes forbid unknown fields."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class SQLAction(Action):  # type: ignore[misc]
    """One model turn: the whole reply (``<think>...</think><sql>...</sql>``, or ``<ask>...</ask>``
    where the row offers a clarifying question), scored as the environment scores any reply; a reply
    without SQL is a format error in the turn record, never a server error."""

    response: str = Field(description="the model's reply for this turn")


class SQLObservation(Observation):  # type: ignore[misc]
    """What the model sees next and what the trainer keeps.

    ``messages``: on reset the opening messages (system and user), on a step the next user message
    (the ODT feedback, or the answer to a clarifying question), empty once the episode is over.
    ``record``: the turn's record (the fields of :class:`~progress_sql.env.records.TurnRecord`, with
    ``gold_error``/``database_error`` and ``stop`` on an unscored step); empty on reset. It travels as
    a field because OpenEnv's wire format leaves ``metadata`` out (serialize_observation,
    openenv/core/env_server/serialization.py:136-171); the client puts it back into ``metadata``.
    ``episode``: which row is played and why it cannot be scored, if so (on every observation).
    ``metrics``: the episode's summary once it is over (turns, asks, match, k_star, reward)."""

    messages: list[dict[str, str]] = Field(default_factory=list)
    record: dict[str, Any] = Field(default_factory=dict)
    episode: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)


class SQLState(State):  # type: ignore[misc]
    """The session's state (OpenEnv's ``episode_id`` and ``step_count``): the row being played, the
    turn budget, whether the episode is over, and its summary so far."""

    index: int | None = None
    db_id: str = ""
    max_turns: int = 0
    done: bool = False
    metrics: dict[str, Any] = Field(default_factory=dict)
