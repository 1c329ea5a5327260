"""The client of the server: OpenEnv's ``EnvClient`` (openenv-core 0.3.0, openenv/core/env_client.py:54),
one WebSocket session per client, async, or synchronous through ``.sync()``::

    with ProgressSQLEnvClient(base_url="http://localhost:8001").sync() as env:
        result = env.reset(index=0)
        result = env.step(SQLAction(response="<think>...</think><sql>SELECT ...</sql>"))
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from progress_sql.integrations.openenv.models import SQLAction, SQLObservation, SQLState


class ProgressSQLEnvClient(EnvClient[SQLAction, SQLObservation, SQLState]):  # type: ignore[misc]
    """``reset(index=..., seed=...)`` plays a row; ``step`` takes an :class:`SQLAction` (or the reply's
    text). Each result's observation carries the next messages, and its ``metadata`` the turn's record."""

    def _step_payload(self, action: SQLAction | str) -> dict[str, Any]:
        reply = SQLAction(response=action) if isinstance(action, str) else action
        return {"response": reply.response, **({"metadata": reply.metadata} if reply.metadata else {})}

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[SQLObservation]:
        fields = dict(payload.get("observation", {}))
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        # the record comes as a field (OpenEnv's wire format drops metadata); it is the metadata here
        observation = SQLObservation(**fields, reward=reward, done=done, metadata=dict(fields.get("record", {})))
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> SQLState:
        return SQLState(**payload)
