"""TurnRecord (one turn as plain data) and env_config_from_mapping (an EnvConfig from plain values)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from progress_sql.data import case_study
from progress_sql.data.embedded import EMBEDDED_DIR
from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env.core import make_store
from progress_sql.env.records import TurnRecord, trajectory_of
from progress_sql.env.settings import ENV_FIELDS, env_config_from_mapping
from progress_sql.errors import ConfigError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.odt import OdtConfig
from progress_sql.odt.tags import Finding
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.types import Example, RewardBreakdown


def answer(sql: str) -> str:
    return f"<think>fix</think><sql>{sql}</sql>"


def test_records_of_an_episode_round_trip_and_score_like_the_environment(lenses_db: Path, pool: ExecutionPool) -> None:
    env = SQLRefineEnv(store=make_store(EnvConfig(), pool=pool))
    env.reset(Example(0, case_study.QUESTION, "contact_lenses", str(lenses_db), case_study.GOLD_SQL))
    texts = [answer(sql) for sql in case_study.TURNS]
    steps = [env.step(text) for text in texts]
    records = [step.info for step in steps]

    assert [r.response for r in records] == texts

    assert [r.turn for r in records] == [1, 2, 3]
    assert records[0].feedback == steps[0].observation["content"]  # type: ignore[index]
    assert records[-1].feedback is None
    assert [r.reward for r in records] == [None, None, steps[-1].info.reward]
    assert trajectory_of(records) == env.trajectory  # the reward sees what the environment saw
    for record in records:
        assert TurnRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record  # lossless through JSON
    rounded = records[0].to_dict(digits=2)
    assert rounded["f"] == round(records[0].f, 2)
    assert rounded["tags"] == list(records[0].tags)
    assert records[-1].to_dict()["reward"]["version"] == "progressive-v2"


def test_a_minimal_record_reads_with_empty_defaults() -> None:
    record = TurnRecord.from_dict({"sql": None, "format_ok": False, "exec_status": "no_sql", "match": False, "f": 0.0})
    assert (record.response, record.tags, record.reward, record.f_struct) == ("", (), None, 0.0)
    assert not record.as_turn().executable


def test_every_env_config_field_from_plain_values(tmp_path: Path) -> None:
    config = env_config_from_mapping(
        {"max_turns": 3, "preset": "spider", "preset_options": {"keep_distinct": True}, "feedback": "tags+error",
         "schema_profile": "compact", "timeout_s": 1.5, "max_rows": 10, "preview_rows": 2, "reward": "sql-r1",
         "progressive": {"gamma": 0.8}, "odt": {"alpha": 0.6, "weights": {"select": 0.3}}, "suite": str(tmp_path),
         "tasks": {"offer_ask": True, "guess_wrong": -2.0}, "prompt": "small", "protocol": "probe"}
    )  # fmt: skip
    assert set(ENV_FIELDS) == {"max_turns", "preset", "preset_options", "feedback", "schema_profile", "timeout_s",
                               "max_rows", "preview_rows", "reward", "progressive", "odt", "suite",
                               "backend_db", "tasks", "prompt", "protocol"}  # fmt: skip
    assert (config.prompt, config.protocol) == ("small", "probe")
    assert (config.tasks.offer_ask, config.tasks.guess_wrong) == (True, -2.0)
    assert (config.max_turns, config.preset, dict(config.preset_options)) == (3, "spider", {"keep_distinct": True})
    assert config.progressive == ProgressiveConfig(gamma=0.8)
    assert (config.odt.alpha, config.odt.weights.select) == (0.6, 0.3)
    assert config.suite == str(tmp_path)
    assert env_config_from_mapping({}) == EnvConfig()
    on_duckdb = env_config_from_mapping({"backend_db": f"duckdb:{tmp_path}"})
    assert (on_duckdb.backend_db, on_duckdb.odt.dialect, on_duckdb.odt.db_engine) == (
        f"duckdb:{tmp_path}",
        "duckdb",
        "DuckDB",
    )
    given = EnvConfig(odt=OdtConfig(alpha=0.5))
    assert env_config_from_mapping({"odt": given.odt, "progressive": given.progressive}) == given  # objects pass


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown EnvConfig keys: turns \(EnvConfig fields: max_turns,"):
        env_config_from_mapping({"turns": 2})
    named = r"unknown progress_sql env_config keys: turns \(EnvConfig fields: max_turns,"
    with pytest.raises(ConfigError, match=named):
        env_config_from_mapping({"turns": 2}, source="progress_sql env_config")
    with pytest.raises(ConfigError, match=r"unknown progressive keys: gama \(ProgressiveConfig fields: omega_fmt"):
        env_config_from_mapping({"progressive": {"gama": 0.8}})
    with pytest.raises(ConfigError, match=r"unknown odt\.weights keys: selekt"):
        env_config_from_mapping({"odt": {"weights": {"selekt": 0.3}}})
    with pytest.raises(ConfigError, match="must be >= 1"):
        env_config_from_mapping({"max_turns": 0})  # EnvConfig's own checks still apply


def test_a_reward_breakdown_round_trips_through_plain_data() -> None:
    breakdown = RewardBreakdown(2.5, (("late", 2.0), ("fmt", 0.5)), "progressive-v1", "abc")
    assert breakdown.to_dict() == {
        "total": 2.5,
        "components": {"late": 2.0, "fmt": 0.5},
        "version": "progressive-v1",
        "config_hash": "abc",
    }
    assert RewardBreakdown.from_dict(breakdown.to_dict()) == breakdown


def test_findings_say_where_each_tag_was_found_and_older_records_still_load(pool: ExecutionPool) -> None:
    database = str(EMBEDDED_DIR / "concert_singer" / "concert_singer.sqlite")
    gold = "SELECT song_name FROM singer WHERE age > (SELECT avg(age) FROM singer)"
    env = SQLRefineEnv(EnvConfig(max_turns=2), store=make_store(EnvConfig(), pool=pool))
    env.reset(Example(0, "Songs of singers older than average?", "concert_singer", database, gold))
    record = env.step(answer(gold.replace("avg(age)", "max(age)"))).info  # wrong inside the WHERE subquery
    assert Finding("AGGREGATION_MISMATCH", ("where",)) in record.findings
    assert {f.tag for f in record.findings} == set(record.tags)
    data = json.loads(json.dumps(record.to_dict()))
    assert {"tag": "AGGREGATION_MISMATCH", "location": ["where"]} in data["findings"]
    assert TurnRecord.from_dict(data) == record
    older = {key: value for key, value in data.items() if key != "findings"}  # written before findings were kept
    assert TurnRecord.from_dict(older) == replace(record, findings=())
    as_text = data | {"findings": [str(f) for f in record.findings]}  # "AGGREGATION_MISMATCH@where" also reads
    assert TurnRecord.from_dict(as_text) == record
