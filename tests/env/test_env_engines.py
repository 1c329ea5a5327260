"""An environment episode whose queries run on PostgreSQL (a throw-away server): the prompt and the
feedback name PostgreSQL, the ODT parses PostgreSQL, the gold is transpiled, a match ends the episode."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.data.tasks import load_task
from progress_sql.env import EnvConfig, SQLRefineEnv
from progress_sql.errors import ConfigError
from progress_sql.execution.port import port_database, reader_location

pytest.importorskip("psycopg", reason="needs the [engines] extra (scripts/test.sh installs it)")


def test_an_episode_runs_on_postgresql(music_dir: Path, pg_admin: str) -> None:
    port_database(music_dir / "database" / "music" / "music.sqlite", pg_admin, "music")
    example = load_task(str(music_dir / "questions.json"), music_dir)[1]  # France, age > 40
    config = EnvConfig(max_turns=3, timeout_s=5.0, feedback="tags+error", backend_db=reader_location(pg_admin))
    with SQLRefineEnv(config) as env:
        assert env.store.location(example).endswith("#music")
        messages = env.reset(example)
        assert "Database Engine: PostgreSQL" in messages[0]["content"]
        # SQLite's backticks are a PostgreSQL syntax error: the ODT's own verdict, and the server's
        first = env.step("<think>.</think><sql>SELECT `name` FROM singer</sql>")
        assert first.info.exec_status == "error"
        assert "PARSE_ERROR" in first.info.tags
        assert first.observation is not None
        assert "PostgreSQL" in first.observation["content"]
        second = env.step("<think>.</think><sql>SELECT name FROM singer WHERE country = 'France'</sql>")
        assert second.info.exec_status == "ok"
        assert not second.info.match
        third = env.step("<think>.</think><sql>SELECT name FROM singer WHERE country = 'France' AND age > 40</sql>")
        assert third.terminated
        assert third.info.match
        assert third.info.reward is not None


def test_a_backend_must_be_another_engine(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="postgresql://"):
        EnvConfig(backend_db=str(tmp_path / "x.sqlite"))
