"""The SkyRL environment through skyrl-gym itself: exported rows loaded as SkyRL's PromptDataset
reads them, ``skyrl_gym.make`` with those extras, then steps on a real database."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the SkyRL tests need the [skyrl] extra")
datasets = pytest.importorskip("datasets", reason="loading exported parquet needs datasets")

from progress_sql.errors import ConfigError, DatasetError  # noqa: E402
from progress_sql.export.build import export_items, write_export  # noqa: E402
from progress_sql.export.formats import SKYRL_ENV_CLASS, get_format  # noqa: E402
from progress_sql.integrations.skyrl import close_pools, register_env  # noqa: E402
from progress_sql.types import Example  # noqa: E402
from tests.conftest import build_database  # noqa: E402

GOLD = 'SELECT name FROM singer WHERE country = "France" AND age > 40'
WRONG = "<think>all singers</think><sql>SELECT name FROM singer</sql>"
RIGHT = f"<think>filter</think><sql>{GOLD}</sql>"
ENDLESS = (
    "<think>count forever</think>"
    "<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c</sql>"
)


@pytest.fixture(scope="module", autouse=True)
def _stop_workers() -> Iterator[None]:
    yield
    close_pools()


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Two exported SkyRL rows (music with its database, one whose database is absent), read back
    the way SkyRL's PromptDataset reads a parquet file."""
    folder = tmp_path_factory.mktemp("skyrl")
    db = build_database("music.sql", folder / "database")
    examples = [
        Example(1, "Names of singers from France older than 40?", "music", str(db), GOLD),
        Example(0, "How many?", "gone", str(folder / "database" / "gone" / "gone.sqlite"), "SELECT 1"),
    ]
    out = folder / "train.parquet"
    write_export(export_items([("spider-train", e) for e in examples]), get_format("skyrl"), out)
    return [dict(row) for row in datasets.load_dataset("parquet", data_files=str(out))["train"]]


def make(row: dict[str, Any], max_turns: int = 3, **env_config: Any) -> tuple[Any, list[dict[str, str]]]:
    """What SkyRL's generator does with a dataset row: prompt and env_class out, the rest are extras,
    plus its own turn budget; then skyrl_gym.make(env_class, env_config=..., extras=...)."""
    extras = dict(row)
    prompt, env_class = extras.pop("prompt"), extras.pop("env_class")
    extras["max_turns"] = max_turns
    register_env()
    return skyrl_gym.make(env_class, env_config=env_config, extras=extras), prompt


def test_registered_made_and_stepped_mismatch_then_match(rows: list[dict[str, Any]]) -> None:
    row = rows[0]
    assert row["env_class"] == SKYRL_ENV_CLASS
    assert row["extra_info"]["verified"] is True
    env, prompt = make(row)
    assert env.spec.id == SKYRL_ENV_CLASS
    assert env.max_turns == 3
    opening, meta = env.init(prompt)
    assert opening == prompt
    assert [m["role"] for m in opening] == ["system", "user"]
    assert "CREATE TABLE singer" in opening[1]["content"]
    assert meta == {"db_id": "music", "max_turns": 3, "gold_error": "", "database_error": ""}

    first = env.step(WRONG)
    assert first["done"] is False
    assert first["reward"] == 0.0
    assert [m["role"] for m in first["observations"]] == ["user"]
    assert first["observations"][0]["content"].startswith("Feedback:")
    assert "WHERE" in first["observations"][0]["content"]  # the ODT names the missing filter
    assert (first["metadata"]["match"], first["metadata"]["exec_status"]) == (False, "ok")

    second = env.step(RIGHT)
    assert second["done"] is True
    assert second["observations"] == []
    assert second["metadata"]["match"] is True
    assert second["reward"] == pytest.approx(second["metadata"]["reward"]["total"])
    assert second["reward"] > 0
    assert set(second["metadata"]["reward"]["components"]) >= {"align", "exec"}
    assert (second["metadata"]["response"], second["metadata"]["feedback"]) == (RIGHT, None)
    assert first["metadata"]["feedback"] == first["observations"][0]["content"]
    assert env.get_metrics() == {"turns": 2, "asks": 0, "match": True, "k_star": 2,
                                 "reward": second["reward"]}  # fmt: skip


def test_unbounded_recursive_cte_times_out_as_data(rows: list[dict[str, Any]]) -> None:
    env, prompt = make(rows[0], max_turns=2, timeout_s=0.5)
    env.init(prompt)
    first = env.step(ENDLESS)
    assert first["done"] is False
    assert first["metadata"]["exec_status"] == "timeout"
    assert first["observations"][0]["role"] == "user"
    last = env.step(ENDLESS)  # the turn budget ends the episode without a match
    assert last["done"] is True
    assert last["metadata"]["exec_status"] == "timeout"
    assert last["metadata"]["match"] is False
    assert last["reward"] == last["metadata"]["reward"]["total"]


def test_a_failing_gold_ends_the_episode_with_reward_zero(rows: list[dict[str, Any]]) -> None:
    """A gold that fails is data for the trainer (reward 0, the reason in the metadata), not a crash."""
    row = {**rows[0], "reward_spec": {**rows[0]["reward_spec"], "ground_truth": "SELECT nme FROM nowhere"}}
    env, prompt = make(row)
    opening, meta = env.init(prompt)
    assert opening == prompt
    assert "nowhere" in meta["gold_error"]
    step = env.step(RIGHT)
    assert (step["done"], step["reward"], step["observations"]) == (True, 0.0, [])
    assert step["metadata"]["gold_error"] == meta["gold_error"]
    assert step["metadata"]["stop"] == "gold_invalid"


def test_step_rewards_add_up_to_the_trajectory_reward(rows: list[dict[str, Any]]) -> None:
    actions = ["<think>x</think><sql>SELECT nope FROM singer</sql>", WRONG, RIGHT]  # error, mismatch, match
    final, _ = make(rows[0])
    final.init([])
    totals = [final.step(a) for a in actions]
    stepped, _ = make(rows[0], step_rewards=True)
    stepped.init([])
    per_step = [stepped.step(a)["reward"] for a in actions]
    assert [o["reward"] for o in totals[:2]] == [0.0, 0.0]
    assert sum(per_step) == pytest.approx(totals[-1]["reward"])
    assert any(r != 0.0 for r in per_step[:2])  # the alignment gained on turn 2 shows before the end


def test_bad_rows_and_settings_say_what_to_fix(rows: list[dict[str, Any]]) -> None:
    with pytest.raises(ConfigError, match="unknown progress_sql env_config keys: turns"):
        make(rows[0], turns=2)
    broken = {k: v for k, v in rows[0].items() if k != "reward_spec"}
    with pytest.raises(DatasetError, match=r"reward_spec\.ground_truth"):
        make(broken)
    register_env()  # registering again is a no-op
    skyrl_gym.register(id="progress_sql_other", entry_point="skyrl_gym.envs.sql.env:SQLEnv")
    with pytest.raises(ConfigError, match="already registered"):
        register_env("progress_sql_other")
    skyrl_gym.envs.registration.deregister("progress_sql_other")


def test_the_prompt_is_the_environments_own(rows: list[dict[str, Any]]) -> None:
    env, prompt = make(rows[0])
    built, _ = env.init([])  # an empty prompt: the environment's opening messages
    assert json.dumps(built) == json.dumps(prompt)


def test_registration_defaults_then_env_config_then_skyrl_turn_budget(rows: list[dict[str, Any]]) -> None:
    with pytest.raises(ConfigError, match="unknown progress_sql env_config keys: timeout"):
        register_env("progress_sql_defaults", timeout=1)
    register_env("progress_sql_defaults", timeout_s=0.5, step_rewards=True, max_turns=6)
    register_env("progress_sql_defaults", timeout_s=0.5, step_rewards=True, max_turns=6)  # same settings: no-op
    with pytest.raises(ConfigError, match="already registered"):
        register_env("progress_sql_defaults", timeout_s=2.0)
    extras = {k: v for k, v in rows[0].items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make("progress_sql_defaults", env_config={}, extras=extras)  # SkyRL passes {} by default
    assert (env.config.timeout_s, env.step_rewards, env.max_turns) == (0.5, True, 6)
    env = skyrl_gym.make("progress_sql_defaults", env_config={"timeout_s": 3.0}, extras={**extras, "max_turns": 2})
    assert (env.config.timeout_s, env.step_rewards, env.max_turns) == (3.0, True, 2)
    every = {"reward": "one-shot", "progressive": {"gamma": 0.8}, "odt": {"alpha": 0.6}, "preset": "spider"}
    env = skyrl_gym.make("progress_sql_defaults", env_config=every, extras=extras)  # any EnvConfig field
    assert (env.config.reward, env.config.progressive.gamma, env.config.odt.alpha, env.config.preset) == (
        "one-shot", 0.8, 0.6, "spider")  # fmt: skip
    skyrl_gym.envs.registration.deregister("progress_sql_defaults")


def agent_loop(row: dict[str, Any], outputs: Sequence[str], max_turns: int = 3) -> dict[str, Any]:
    """One trajectory the way skyrl 0.4.0's SkyRLGymGenerator.agent_loop runs it, with ``outputs`` as
    the model's texts (skyrl/train/generators/skyrl_gym_generator.py): the row split as PromptDataset
    does (skyrl/train/dataset/dataset.py:86-94); ``env_extras["max_turns"]`` set (:393);
    ``skyrl_gym.make(env_class, env_config=..., extras=env_extras)`` (:396-397); ``env.init`` on a deep
    copy of the prompt (:401, 404); ``env.step(output)`` while not done (:458, 549-553); then
    ``env.get_metrics()`` and ``env.close()`` (:640-642). Nothing there catches an exception: one raise
    from the environment ends the whole generation step."""
    extras = {key: value for key, value in row.items() if key not in ("prompt", "env_class")}
    extras["max_turns"] = max_turns
    register_env()  # what the entry point does in the Ray task before the generator runs
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
    chat_history, init_metadata = env.init(copy.deepcopy(row["prompt"]))
    steps: list[Any] = []
    replies = iter(outputs)
    while not (steps and steps[-1]["done"]):
        steps.append(env.step(next(replies)))
    metrics = env.get_metrics()
    env.close()
    return {"chat_history": chat_history, "init_metadata": init_metadata, "steps": steps, "metrics": metrics}


def test_a_missing_database_is_a_scored_failure_and_the_next_row_scores(rows: list[dict[str, Any]]) -> None:
    """A row whose database is not on this node ends after one model turn with reward 0 and the
    reason in the metadata (as verl's agent loop scores it), and the run goes on: the next, healthy
    row in the same process scores normally."""
    missing = rows[1]
    assert missing["extra_info"]["verified"] is False
    failed = agent_loop(missing, [RIGHT])
    assert failed["chat_history"] == missing["prompt"]
    assert "database not found" in failed["init_metadata"]["database_error"]
    assert len(failed["steps"]) == 1
    (step,) = failed["steps"]
    assert step["reward"] == 0.0
    assert step["done"] is True
    assert step["observations"] == []
    assert step["metadata"]["stop"] == "database_error"
    assert step["metadata"]["database_error"] == failed["init_metadata"]["database_error"]
    assert step["metadata"]["gold_error"] == ""
    assert failed["metrics"]["reward"] == 0.0
    assert failed["metrics"]["match"] is False

    healthy = agent_loop(rows[0], [WRONG, RIGHT])
    assert [s["done"] for s in healthy["steps"]] == [False, True]
    assert healthy["steps"][-1]["metadata"]["match"] is True
    assert healthy["steps"][-1]["reward"] > 0
    assert healthy["metrics"]["match"] is True


def test_a_database_that_cannot_be_read_is_a_scored_failure(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    """A database file that is there but is no SQLite database: the DatasetError it raises while the
    gold is prepared is recorded as the row's ``database_error``, never raised into SkyRL."""
    broken = tmp_path / "broken" / "broken.sqlite"
    broken.parent.mkdir()
    broken.write_bytes(b"not a database" * 100)
    extra_info = {**rows[0]["extra_info"], "db_id": "broken", "db_path": str(broken)}
    row = {**rows[0], "extra_info": extra_info}
    failed = agent_loop(row, [RIGHT])
    (step,) = failed["steps"]
    assert step["reward"] == 0.0
    assert step["done"] is True
    assert step["metadata"]["stop"] == "database_error"
    assert "not a readable SQLite database" in step["metadata"]["database_error"]
