"""A real TRL training step whose environment executes on PostgreSQL (a throw-away server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from progress_sql.env import EnvConfig
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.port import port_database, reader_location
from tests.integrations.test_trl_training import train_steps

pytest.importorskip("psycopg", reason="needs the [engines] extra (scripts/test.sh installs it)")


def test_a_grpo_step_runs_with_the_postgresql_backend(
    music_dir: Path, pg_admin: str, tiny_tokenizer: Any, tmp_path: Path
) -> None:
    from tests.tiny_lm import tiny_model

    port_database(music_dir / "database" / "music" / "music.sqlite", pg_admin, "music")
    config = EnvConfig(max_turns=2, timeout_s=2.0, backend_db=reader_location(pg_admin))
    assert config.odt.dialect == "postgres"
    with ExecutionPool(workers=1) as pool:
        logs, rollout = train_steps(
            "grpo", tiny_model(tiny_tokenizer), tiny_tokenizer, music_dir, pool, tmp_path, config
        )
    assert len(logs) == 4
    assert any("rewards/exec/mean" in entry for entry in logs)
    # the gold answers (SQLite text, mostly valid PostgreSQL) executed on the server: some turn matched
    assert any(turns == 1 for output in rollout.outputs for turns in output["num_turns"])
