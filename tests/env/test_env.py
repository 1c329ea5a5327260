"""SQLRefineEnv: the Appendix G case study replayed, stop and budget rules, feedback levels, garbage."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progress_sql.data import case_study
from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env import core as env_core
from progress_sql.env.core import make_store, shared_store
from progress_sql.errors import ConfigError, GoldQueryError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.gold import GoldStore
from progress_sql.odt import OdtConfig
from progress_sql.types import Example


def answer(sql: str) -> str:
    return f"<think>Let me fix the query.</think><sql>{sql}</sql>"


def lenses_example(db: Path, gold: str = case_study.GOLD_SQL) -> Example:
    return Example(0, case_study.QUESTION, "contact_lenses", str(db), gold)


@pytest.fixture
def store(pool: ExecutionPool) -> GoldStore:
    """The store of the default EnvConfig (max_turns, feedback and reward do not change it)."""
    return make_store(EnvConfig(), pool=pool)


def test_case_study_replays_to_a_match_at_turn_three(lenses_db: Path, store: GoldStore) -> None:
    env = SQLRefineEnv(store=store)
    messages = env.reset(lenses_example(lenses_db))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "CREATE TABLE contact_lenses" in messages[1]["content"]
    assert case_study.QUESTION in messages[1]["content"]

    steps = [env.step(answer(sql)) for sql in case_study.TURNS]
    first, second, third = (step.info for step in steps)
    assert [s.terminated for s in steps] == [False, False, True]
    assert not any(s.truncated for s in steps)
    assert [s.reward for s in steps[:2]] == [0.0, 0.0]
    assert (first.match, second.match, third.match) == (False, False, True)
    assert first.f < second.f < third.f
    assert set(first.tags) == {
        "SELECT_ERROR", "FROM_OR_JOIN_TABLE_MISMATCH", "JOIN_REDUNDANT", "JOIN_KEY_MISMATCH", "GROUP_BY_ERROR",
        "HAVING_ERROR",
    }  # fmt: skip
    assert set(second.tags) == {"FROM_OR_JOIN_TABLE_MISMATCH", "JOIN_REDUNDANT", "JOIN_KEY_MISMATCH", "HAVING_MISSING"}
    assert steps[0].observation is not None
    assert steps[0].observation["content"].startswith("Feedback: your previous SQL has structural issues:")
    assert steps[2].observation is None

    # R = fmt 0.5 + keep 0.5 + late 2.0 * 0.5^(3-1) + align 0.5 * (F3 - F1)
    reward = third.reward
    assert reward is not None
    assert dict(reward.components) == pytest.approx(
        {"fmt": 0.5, "exec": 0.5, "late": 0.5, "align": 0.5 * (third.f - first.f)}
    )
    assert steps[2].reward == pytest.approx(reward.total)
    assert env.trajectory.k_star == 3


def test_budget_exhausted_is_truncated_not_terminated(lenses_db: Path, store: GoldStore) -> None:
    env = SQLRefineEnv(EnvConfig(max_turns=2), store=store)
    env.reset(lenses_example(lenses_db))
    first = env.step(answer("SELECT supplier_name FROM suppliers"))
    second = env.step("no idea")
    assert (first.terminated, first.truncated) == (False, False)
    assert (second.terminated, second.truncated) == (False, True)
    assert second.info.exec_status == "no_sql"
    assert second.info.reward is not None
    # executable then not: deterioration; final output unformatted; no success; Delta < 0
    assert dict(second.info.reward.components) == pytest.approx({"fmt": 0.0, "exec": -0.5, "late": 0.0, "align": -0.1})
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(answer("SELECT 1"))


def test_match_on_the_last_turn_is_terminated(lenses_db: Path, pool: ExecutionPool) -> None:
    with SQLRefineEnv(EnvConfig(max_turns=1)) as env:  # the environment builds (and closes) its own store
        env.reset(lenses_example(lenses_db))
        step = env.step(answer(case_study.GOLD_SQL))
    assert (step.terminated, step.truncated) == (True, False)
    assert step.reward == pytest.approx(2.9)


def test_step_before_reset_raises(store: GoldStore) -> None:
    with pytest.raises(RuntimeError, match="before reset"):
        SQLRefineEnv(store=store).step(answer("SELECT 1"))


def test_failing_gold_is_a_typed_error(lenses_db: Path, store: GoldStore) -> None:
    env = SQLRefineEnv(store=store)
    with pytest.raises(GoldQueryError, match="no_such_table"):
        env.reset(lenses_example(lenses_db, gold="SELECT * FROM no_such_table"))


def test_feedback_levels(lenses_db: Path, store: GoldStore) -> None:
    example = lenses_example(lenses_db)
    bad_column = answer("SELECT nope FROM suppliers")
    tags_only = SQLRefineEnv(EnvConfig(feedback="tags"), store=store)
    tags_only.reset(example)
    text = tags_only.step(bad_column).observation
    assert text is not None
    assert "no such column" not in text["content"]

    with_error = SQLRefineEnv(EnvConfig(feedback="tags+error"), store=store)
    with_error.reset(example)
    text = with_error.step(bad_column).observation
    assert text is not None
    assert "The database reported:" in text["content"]
    assert "no such column" in text["content"]

    with_preview = SQLRefineEnv(EnvConfig(feedback="tags+error+preview"), store=store)
    with_preview.reset(example)
    text = with_preview.step(answer("SELECT supplier_name FROM suppliers ORDER BY supplier_id")).observation
    assert text is not None
    assert "returned 3 row(s); first rows: ('Acme'); ('Bright'); ('Clear')." in text["content"]
    assert case_study.GOLD_SQL not in text["content"]


def test_peer_reward_by_name(lenses_db: Path, store: GoldStore) -> None:
    env = SQLRefineEnv(EnvConfig(max_turns=1, reward="one-shot"), store=store)
    env.reset(lenses_example(lenses_db))
    assert env.step(answer(case_study.GOLD_SQL)).reward == 3.0


def test_bad_config_fails_early() -> None:
    with pytest.raises(ConfigError):
        EnvConfig(max_turns=0)
    with pytest.raises(ConfigError, match="unknown reward"):
        EnvConfig(reward="nope")
    with pytest.raises(ConfigError, match="unknown preset"):
        EnvConfig(preset="nope")


def test_environments_sharing_a_store_prepare_the_gold_once(lenses_db: Path, pool: ExecutionPool) -> None:
    """G = 8 samples of one prompt: eight environments, one store, one gold execution and one
    preparation (the schema, the ODT reference and the prompt DDL included)."""
    cache = GoldCache()
    store = make_store(EnvConfig(), pool=pool, cache=cache)
    example = lenses_example(lenses_db)
    envs = [SQLRefineEnv(store=store) for _ in range(8)]
    openings = [env.reset(example) for env in envs]
    assert (cache.misses, cache.hits) == (1, 0)
    assert all(env._gold is envs[0]._gold for env in envs)
    assert all(messages == openings[0] for messages in openings)
    rewards = [env.step(answer(case_study.GOLD_SQL)).reward for env in envs]
    assert rewards == [rewards[0]] * 8
    assert (cache.misses, cache.hits) == (1, 0)
    for env in envs:
        env.close()
    assert store.prepare(example).results[0].ok  # closing an environment leaves a shared store open


def test_a_store_for_another_config_is_refused(pool: ExecutionPool, store: GoldStore) -> None:
    for config in (
        EnvConfig(preset="spider"),
        EnvConfig(preset_options={"tie_aware": False}),
        EnvConfig(timeout_s=2.0),
        EnvConfig(max_rows=10),
        EnvConfig(odt=OdtConfig(alpha=0.5)),
    ):
        with pytest.raises(ConfigError, match="gold store has another"):
            SQLRefineEnv(config, store=store)
    SQLRefineEnv(EnvConfig(max_turns=2, feedback="tags+error", reward="one-shot"), store=store)


def test_shared_store_is_one_store_per_judging_settings_pool_and_cache(pool: ExecutionPool) -> None:
    cache = GoldCache()
    store = shared_store(EnvConfig(), pool=pool, cache=cache)
    # settings that do not change how golds are judged or diagnosed share the store
    assert (
        shared_store(EnvConfig(max_turns=2, feedback="tags+error", reward="one-shot"), pool=pool, cache=cache) is store
    )
    assert shared_store(EnvConfig(timeout_s=2.0), pool=pool, cache=cache) is not store
    assert shared_store(EnvConfig(), pool=pool, cache=GoldCache()) is not store
    assert shared_store(EnvConfig(), pool=pool, cache=cache) is store
    with ExecutionPool(workers=1) as short_lived:
        first = shared_store(EnvConfig(), pool=short_lived, cache=cache)
        assert shared_store(EnvConfig(), pool=short_lived, cache=cache) is first
    assert short_lived.closed
    shared_store(EnvConfig(), pool=pool, cache=cache)  # any call drops the stores of closed pools
    assert all(not s.pool.closed for s in env_core._shared_stores.values())


garbage = st.one_of(
    st.text(max_size=300),
    st.just(""),
    st.just("<think></think><sql></sql>"),
    st.just("<think>x</think><sql>SELECT 1; SELECT 2</sql>"),
    st.just("<sql>DROP TABLE suppliers</sql>"),
    st.builds(lambda n: "<think>" + "x" * n, st.integers(0, 200_000)),
    st.just("<think>a</think><sql>SELECT " + "x, " * 350_000 + "1</sql>"),  # a megabyte
    st.builds(lambda s: f"<think>a</think><sql>{s}</sql>", st.text(max_size=200)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(garbage, min_size=1, max_size=4))
def test_garbage_never_raises_and_rewards_stay_finite(
    lenses_db: Path, pool: ExecutionPool, responses: list[str]
) -> None:
    config = EnvConfig(max_turns=len(responses), timeout_s=2.0)
    env = SQLRefineEnv(config, store=make_store(config, pool=pool))
    env.reset(lenses_example(lenses_db))
    for response in responses:
        step = env.step(response)
        assert math.isfinite(step.reward)
        assert 0.0 <= step.info.f <= 1.0
        if step.terminated or step.truncated:
            low, high = env.config.value_range
            assert low <= step.reward <= high
            break
    assert step.terminated or step.truncated
