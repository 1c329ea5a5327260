"""The named profiles (``progress_sql.profiles``): docs/profiles.md's table is the generated one, the
default profile is today's ``EnvConfig()``, the paper profile sets what the paper states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from progress_sql.env.core import EnvConfig
from progress_sql.env.settings import env_config_from_profile
from progress_sql.errors import ConfigError
from progress_sql.integrations.trainer_setting import SETTINGS
from progress_sql.odt.config import PAPER_TAGS
from progress_sql.profiles import DEFAULT_PROFILE, PROFILES, get_profile, main, markdown_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "profiles.md"


def test_docs_hold_exactly_the_generated_table(capsys: pytest.CaptureFixture[str]) -> None:
    doc = DOC.read_text(encoding="utf-8")
    table = markdown_table()
    header = table.splitlines()[0]
    assert doc.count(header) == 1
    start = doc.index(header)
    end = doc.find("\n\n", start)
    assert doc[start:end] == table, "docs/profiles.md's profile table is not the generated one"
    assert main(["table"]) == 0
    assert capsys.readouterr().out.strip() == table
    assert main([]) == 2


def test_the_default_profile_is_todays_environment() -> None:
    assert DEFAULT_PROFILE == "progress-sql"
    assert env_config_from_profile("progress-sql") == EnvConfig()


def test_the_paper_profile_sets_what_the_paper_states() -> None:
    config = env_config_from_profile("paper")
    assert (config.max_turns, config.reward, config.progressive.gamma) == (4, "progressive-paper", 0.5)
    assert (config.prompt, config.schema_profile, config.feedback) == ("paper", "ddl", "tags")
    assert config.tasks.offer_ask is False
    assert config.preset == "bird"
    odt = config.odt
    assert (odt.verdict, odt.alpha, odt.set_op_weight) == ("syntax", 0.7, 0.0)
    assert (odt.select_order, odt.join_type, odt.nulls_order, odt.limit_values) == (False, False, False, False)
    assert odt.tag_set == tuple(sorted(PAPER_TAGS))
    assert odt.tag_order == PAPER_TAGS
    trainer = SETTINGS[get_profile("paper").trainer_setting.value]
    assert (trainer.samples_per_prompt.value, trainer.temperature.value, trainer.turns.value) == (8, 1.0, 4)
    assert trainer.learning_rate.value == 1e-6
    assert trainer.turns.value == config.max_turns


def test_overrides_apply_on_top_of_a_profile() -> None:
    config = env_config_from_profile("paper", {"max_turns": 1, "preset": "spider"})
    assert (config.max_turns, config.preset, config.reward) == (1, "spider", "progressive-paper")
    with pytest.raises(ConfigError, match="profile"):
        get_profile("nope")


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_is_plain_data_and_names_a_trainer_setting(name: str) -> None:
    profile = PROFILES[name]
    settings = profile.settings()
    assert settings["name"] == name
    assert json.loads(json.dumps(settings)) == settings
    assert profile.trainer_setting.value in SETTINGS
    assert all(item.source in ("paper", "ours") and item.why for item in profile.sourced().values())


def test_the_odt_switches_read_from_plain_values() -> None:
    from progress_sql.env.settings import env_config_from_mapping

    config = env_config_from_mapping(
        {"odt": {"verdict": "syntax", "join_type": False, "tag_set": ["SELECT_ERROR"], "tag_order": ["SELECT_ERROR"]}}
    )
    assert (config.odt.verdict, config.odt.join_type) == ("syntax", False)
    assert (config.odt.tag_set, config.odt.tag_order) == (("SELECT_ERROR",), ("SELECT_ERROR",))


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_names_a_registered_reward(name: str) -> None:
    """Checked here, not when profiles.py is imported: the reward registry loads sqlglot, which eval's
    parent process must not (tests/judge/test_analysis.py)."""
    from progress_sql.rewards.registry import get_reward

    assert get_reward(PROFILES[name].reward.value) is not None
