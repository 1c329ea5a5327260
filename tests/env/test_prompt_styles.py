"""The environment in the ``small`` prompt style: its system prompt, the answer format its format check
expects, and the closing instruction of its feedback turns (progress_sql.prompts.PROMPT_STYLES)."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.data import case_study
from progress_sql.env.core import EnvConfig, SQLRefineEnv, make_store
from progress_sql.errors import ConfigError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.prompts import PROMPT_STYLES, revision_instruction
from tests.env.test_env import lenses_example


def test_small_style_asks_for_sql_alone_and_checks_that_format(lenses_db: Path, pool: ExecutionPool) -> None:
    config = EnvConfig(prompt="small", schema_profile="compact")
    env = SQLRefineEnv(config, store=make_store(config, pool=pool))
    system, user = env.reset(lenses_example(lenses_db))
    assert "<think>" not in system["content"]
    assert "inside <sql>...</sql>" in system["content"]
    assert "contact_lenses(" in user["content"]  # the compact schema
    wrong = env.step(f"<sql>{case_study.TURNS[0]}</sql>")
    assert wrong.info.format_ok
    assert wrong.info.format_problem is None
    assert wrong.observation is not None
    feedback = wrong.observation["content"]
    assert feedback.startswith("Feedback: your previous SQL has structural issues:")
    assert feedback.endswith(PROMPT_STYLES["small"].revision())
    assert revision_instruction() not in feedback
    assert "<think>" not in feedback
    # The paper's format is not this style's: the SQL still runs, the format term is lost.
    final = env.step(f"<think>fix it</think><sql>{case_study.TURNS[-1]}</sql>")
    assert final.info.match
    assert not final.info.format_ok
    assert final.info.format_problem == "text or blocks outside the one <sql> block"


def test_paper_style_is_the_default_and_unchanged(lenses_db: Path, pool: ExecutionPool) -> None:
    env = SQLRefineEnv(store=make_store(EnvConfig(), pool=pool))
    system, _ = env.reset(lenses_example(lenses_db))
    assert "<think>" in system["content"]
    step = env.step(f"<think>x</think><sql>{case_study.TURNS[0]}</sql>")
    assert step.info.format_ok
    assert step.observation is not None
    assert step.observation["content"].endswith(revision_instruction())


def test_unknown_prompt_style_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown prompt style 'tiny'"):
        EnvConfig(prompt="tiny")
