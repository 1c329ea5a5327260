"""The environment's reward with a test suite: a hard-coded answer matches on the original database
only, so with ``EnvConfig(suite=...)`` it no longer ends the episode as a match."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.env.core import make_store
from progress_sql.errors import ConfigError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.testsuite.build import build_suites, schema_jobs
from progress_sql.testsuite.distill import SuiteConfig
from progress_sql.testsuite.manifest import write_manifest
from progress_sql.types import Example
from tests.conftest import build_database

GOLD = "SELECT count(*) FROM member"


@pytest.fixture(scope="module")
def example_and_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Example, Path]:
    root = tmp_path_factory.mktemp("env_suite")
    db = build_database("false_positives.sql", root / "database")
    example = Example(0, "How many members are there?", "false_positives", str(db), GOLD)
    config = SuiteConfig(seed=0, pool=8, max_dbs=4)
    jobs, _ = schema_jobs([example, Example(1, "Ages?", "false_positives", str(db), "SELECT age FROM member")])
    write_manifest(root / "suite", config, build_suites(jobs, root / "suite", config), {})
    return example, root / "suite"


def _first_turn(example: Example, pool: ExecutionPool, answer: str, suite: Path | None) -> tuple[bool, str]:
    config = EnvConfig(max_turns=1, suite=None if suite is None else str(suite))
    env = SQLRefineEnv(config, store=make_store(config, pool=pool))
    env.reset(example)
    info = env.step(f"<think>Counting.</think><sql>{answer}</sql>").info
    return info.match, info.verdict


def test_hard_coded_answer_matches_without_the_suite_and_fails_with_it(
    example_and_suite: tuple[Example, Path], pool: ExecutionPool
) -> None:
    example, suite = example_and_suite
    assert _first_turn(example, pool, "SELECT 6", None) == (True, "match")
    assert _first_turn(example, pool, "SELECT 6", suite) == (False, "suite_mismatch")


def test_right_answer_matches_with_the_suite(example_and_suite: tuple[Example, Path], pool: ExecutionPool) -> None:
    example, suite = example_and_suite
    assert _first_turn(example, pool, "SELECT COUNT(member_id) FROM member", suite) == (True, "match")


def test_a_store_with_another_suite_is_refused(example_and_suite: tuple[Example, Path], pool: ExecutionPool) -> None:
    _, suite = example_and_suite
    with_suite = EnvConfig(suite=str(suite))
    with pytest.raises(ConfigError, match="another suite"):
        SQLRefineEnv(with_suite, store=make_store(EnvConfig(), pool=pool))
    with pytest.raises(ConfigError, match="another suite"):
        SQLRefineEnv(EnvConfig(), store=make_store(with_suite, pool=pool))
    SQLRefineEnv(with_suite, store=make_store(EnvConfig(suite=str(suite)), pool=pool))  # equal folders: accepted


def test_missing_suite_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="test-suite folder not found"):
        EnvConfig(suite=str(tmp_path / "nope"))
