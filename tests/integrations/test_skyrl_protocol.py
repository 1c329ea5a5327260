"""SkyRL-SQL's protocol (``EnvConfig.protocol = "skyrl"``) against skyrl-gym 0.4.0's own ``text2sql``
environment: the same five trajectories, step by step, on one database file, give the same
observation text, the same end of episode and the same reward."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the SkyRL tests need the [skyrl] extra")

from skyrl_gym.envs.sql.env import SQLEnv, Text2SQLEnvConfig  # noqa: E402

from progress_sql.env import SQLRefineEnv  # noqa: E402
from progress_sql.env.core import make_store  # noqa: E402
from progress_sql.env.settings import env_config_from_options  # noqa: E402
from progress_sql.execution.pool import ExecutionPool  # noqa: E402
from progress_sql.types import Example  # noqa: E402
from tests.conftest import build_database  # noqa: E402

GOLD = "SELECT name FROM singer WHERE country = 'France' AND age > 40"

#: Five episodes: a probe then the right answer (1); a wrong answer (0); a probe error, a probe whose rows
#: are strings, then an answer with no <think> after the observation (-1); an invalid turn, then the right
#: answer (1); five probes and no answer (-1, the last probe not run).
TRAJECTORIES: tuple[tuple[tuple[str, ...], float], ...] = (
    (("<think>how many</think><sql>SELECT count(*) FROM singer</sql>",
      f"<think>now filter</think><solution>{GOLD}</solution>"), 1.0),
    (("<think>all of them</think><solution>SELECT name FROM singer</solution>",), 0.0),
    (("<think>look</think><sql>SELECT nme FROM singer</sql>",
      "<think>fix the column</think><sql>SELECT name FROM singer WHERE age > 40</sql>",
      f"<solution>{GOLD}</solution>"), -1.0),
    (("I am not sure what to do.", f"<think>answer</think><solution>{GOLD}</solution>"), 1.0),
    (tuple(f"<think>probe {i}</think><sql>SELECT {i} AS n</sql>" for i in range(5)), -1.0),
)  # fmt: skip


@pytest.fixture(scope="module")
def data_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """skyrl-gym's layout for Spider rows: <root>/spider/database/<db_id>/<db_id>.sqlite."""
    root = tmp_path_factory.mktemp("skyrl_sql")
    build_database("music.sql", root / "spider" / "database")
    return root


def _skyrl_episode(root: Path, responses: tuple[str, ...]) -> list[tuple[str | None, bool, float]]:
    extras: dict[str, Any] = {"db_id": "music", "reward_spec": {"ground_truth": GOLD}, "data": "spider"}
    env = SQLEnv(Text2SQLEnvConfig(db_path=str(root)), extras)
    steps = []
    for response in responses:
        out = env.step(response)
        observations = out["observations"]
        steps.append((observations[0]["content"] if observations else None, out["done"], float(out["reward"])))
        if out["done"]:
            break
    return steps


def _our_episode(root: Path, responses: tuple[str, ...], pool: ExecutionPool) -> list[tuple[str | None, bool, float]]:
    config = env_config_from_options("progress-sql", {"protocol": "skyrl"})
    db = root / "spider" / "database" / "music" / "music.sqlite"
    env = SQLRefineEnv(config, store=make_store(config, pool=pool))
    env.reset(Example(0, "Which singers from France are over 40?", "music", str(db), GOLD))
    steps = []
    for response in responses:
        step = env.step(response)
        done = step.terminated or step.truncated
        steps.append((None if step.observation is None else step.observation["content"], done, step.reward))
        if done:
            break
    return steps


@pytest.mark.parametrize(("responses", "reward"), TRAJECTORIES)
def test_the_same_trajectory_gets_the_same_observations_and_reward(
    data_root: Path, pool: ExecutionPool, responses: tuple[str, ...], reward: float
) -> None:
    theirs = _skyrl_episode(data_root, responses)
    ours = _our_episode(data_root, responses, pool)
    assert ours == theirs
    assert theirs[-1][1:] == (True, reward)


def test_the_protocol_defaults_are_skyrl_gyms() -> None:
    config = env_config_from_options("progress-sql", {"protocol": "skyrl"})
    assert (config.max_turns, config.reward, config.preset) == (5, "skyrl-sql", "bird")
    given = env_config_from_options("progress-sql", {"protocol": "skyrl", "max_turns": 3})
    assert given.max_turns == 3  # an option given wins over the protocol's default
