"""NeMo Gym's own ``gymnasium_agent`` runs a whole episode against the server: its ``run`` resets the
environment, calls the model (a scripted Responses API server standing in for the policy: a wrong
answer, then the gold), steps the environment with each response and sums the rewards."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from nemo_gym.config_types import BaseServerConfig
from nemo_gym.server_utils import ServerClient
from omegaconf import OmegaConf
from responses_api_agents.gymnasium_agent.app import GymnasiumAgent, GymnasiumAgentConfig, GymnasiumAgentRunRequest
from starlette.requests import Request

from progress_sql.integrations.nemo_gym.server import INSTANCE_NAME, launch_config
from tests.with_nemo_gym.conftest import RIGHT, SETTINGS, WRONG, Served, free_port, model_response

MODEL = "policy_model"


class ScriptedModel:
    """A Responses API server that answers with the next of ``texts`` and records what it was sent."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = list(texts)
        self.inputs: list[list[dict[str, Any]]] = []
        self.app = FastAPI()
        self.app.post("/v1/responses")(self.respond)

    async def respond(self, body: dict[str, Any]) -> dict[str, Any]:
        self.inputs.append(body["input"])
        return model_response(self.texts.pop(0))


@pytest.fixture
def model() -> Iterator[tuple[ScriptedModel, int]]:
    scripted, port = ScriptedModel([WRONG, RIGHT]), free_port()
    server = uvicorn.Server(uvicorn.Config(scripted.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield scripted, port
    server.should_exit = True
    thread.join(timeout=10)


def test_gymnasium_agent_runs_an_episode_with_odt_feedback(served: Served, model: tuple[ScriptedModel, int]) -> None:
    scripted, model_port = model
    port = int(served.url.rsplit(":", 1)[1])
    config = OmegaConf.create(
        {
            **launch_config(None, host="127.0.0.1", port=port, settings=SETTINGS),
            MODEL: {"responses_api_models": {"scripted": {"host": "127.0.0.1", "port": model_port}}},
        }
    )
    agent = GymnasiumAgent(
        config=GymnasiumAgentConfig(
            host="127.0.0.1",
            port=free_port(),
            entrypoint="app.py",
            name="progress_sql_gymnasium_agent",
            resources_server={"type": "resources_servers", "name": INSTANCE_NAME},
            model_server={"type": "responses_api_models", "name": MODEL},
            max_steps=3,
        ),
        server_client=ServerClient(
            head_server_config=BaseServerConfig.model_validate(OmegaConf.to_container(config.head_server)),
            global_config_dict=config,
        ),
    )
    request = Request({"type": "http", "method": "POST", "path": "/run", "headers": [], "query_string": b""})
    result = served.run(agent.run(request, GymnasiumAgentRunRequest.model_validate(served.rows[0])))

    assert (result.terminated, result.truncated) == (True, False)
    assert result.info["match"] is True
    assert result.reward == pytest.approx(result.info["reward"]["total"])
    assert result.reward > 0
    assert result.info["episode"]["k_star"] == 2
    second_input = scripted.inputs[1]  # the opening, the wrong answer, then the ODT's feedback
    assert len(second_input) == len(served.rows[0]["responses_create_params"]["input"]) + 2
    assert second_input[-1]["role"] == "user"
    assert second_input[-1]["content"].startswith("Feedback:")
    assert "WHERE" in second_input[-1]["content"]
    assert [item.get("role") for item in result.response.model_dump()["output"]] == ["assistant", "user", "assistant"]
