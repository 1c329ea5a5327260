"""The held-out measurements of ``train`` and ``ablate`` run in the run's own environment (issue 32: the
profile is read by every entry point): under ``--profile paper`` their second turns get the paper's
ODT feedback and their Table 8 rates the paper's diagnosis; under the default nothing changed."""

from __future__ import annotations

from pathlib import Path

from progress_sql.env.core import EnvConfig
from progress_sql.profiles import get_profile
from progress_sql.training.heldout import measurement_env, structural_rates
from progress_sql.training.rl import RLSettings
from progress_sql.types import Example
from tests.conftest import build_database


def test_the_measurement_keeps_the_runs_profile_and_sets_only_its_own_fields() -> None:
    for name in ("paper", "progress-sql"):
        run_env = RLSettings(profile=name).env_config()
        measured = measurement_env(run_env, 2, prompt="small")
        assert measured.odt == get_profile(name).odt_config() == run_env.odt
        assert (measured.feedback, measured.progressive, measured.tasks) == (
            run_env.feedback, run_env.progressive, run_env.tasks)  # fmt: skip
        assert (measured.max_turns, measured.timeout_s, measured.schema_profile, measured.prompt) == (
            2, 10.0, "none", "small")  # fmt: skip
    # no run environment: the default profile's, as before the profile existed
    assert measurement_env(None, 3) == measurement_env(EnvConfig(), 3)


def test_table_8_rates_follow_the_runs_odt(tmp_path: Path) -> None:
    db = build_database("music.sql", tmp_path)
    example = Example(index=0, db_id="music", db_path=str(db), question="Names of singers over 30?",
                      gold_sql="SELECT name FROM singer WHERE age > 30")  # fmt: skip
    misspelled = ["SELECT nmae FROM singer WHERE age > 30"]
    paper = structural_rates([example], misspelled, get_profile("paper").odt_config())
    default = structural_rates([example], misspelled, get_profile("progress-sql").odt_config())
    # the paper's verdict is syntax only: the unknown column is a SELECT mismatch; ours stops at SQLite's
    # compile error (a parse failure, none of Table 8's four categories)
    assert paper["SELECT"] == 1.0  # a share
    assert default["SELECT"] == 0.0
    assert structural_rates([example], misspelled) == default
