"""The environment under the ``paper`` profile (``env_config_from_profile``): the Appendix G case study
replayed on its database gives the printed tags and feedback, the DDL-only prompt and Eq. 1-4's reward."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.data import case_study
from progress_sql.env import SQLRefineEnv
from progress_sql.env.core import make_store
from progress_sql.env.settings import env_config_from_profile
from progress_sql.execution.pool import ExecutionPool
from progress_sql.types import Example


def test_case_study_under_the_paper_profile(lenses_db: Path, pool: ExecutionPool) -> None:
    config = env_config_from_profile("paper")
    env = SQLRefineEnv(config, store=make_store(config, pool=pool))
    messages = env.reset(Example(0, case_study.QUESTION, "contact_lenses", str(lenses_db), case_study.GOLD_SQL))
    assert "CREATE TABLE contact_lenses" in messages[1]["content"]
    assert "-- examples:" not in messages[1]["content"]  # the DDL alone
    steps = [env.step(f"<think>...</think><sql>{sql}</sql>") for sql in case_study.TURNS]
    first, second, third = (step.info for step in steps)
    assert first.tags == ("JOIN_KEY_MISMATCH", "FROM_OR_JOIN_TABLE_MISMATCH", "SELECT_ERROR", "GROUP_BY_ERROR")
    assert second.tags == ("JOIN_KEY_MISMATCH", "FROM_OR_JOIN_TABLE_MISMATCH")
    assert (first.match, second.match, third.match) == (False, False, True)
    assert steps[0].observation is not None
    assert (
        steps[0]
        .observation["content"]
        .startswith(
            "Feedback: your previous SQL has structural issues: JOIN_KEY_MISMATCH, FROM_OR_JOIN_TABLE_MISMATCH, "
            "SELECT_ERROR, GROUP_BY_ERROR. "
        )
    )
    assert first.f < second.f < third.f
    reward = third.reward
    assert reward is not None
    assert reward.version.startswith("progressive-paper")
    assert reward.total == pytest.approx(1.746543, abs=1e-6)
