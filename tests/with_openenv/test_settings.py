"""The server's settings and rows: what is checked before it listens, what the one-command launchers
read, and that episode settings (``step_rewards``) reach the episodes served."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="the OpenEnv tests need the [openenv] extra (docs/openenv.md)")

from progress_sql.errors import ConfigError, DatasetError
from progress_sql.integrations.openenv import ProgressSQLEnvClient, build_app
from progress_sql.integrations.openenv import app as app_module
from progress_sql.integrations.openenv.server import read_settings
from tests.with_openenv import serving
from tests.with_openenv.conftest import RIGHT, SETTINGS, WRONG


def test_bad_settings_and_rows_fail_before_the_server_listens(rows_file: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown progress_sql env_config keys: turns"):
        build_app(rows_file, {"turns": 2})
    with pytest.raises(ConfigError, match="max_sessions must be >= 1"):
        build_app(rows_file, {"max_sessions": 0})
    with pytest.raises(ConfigError, match="unknown export format"):
        build_app(rows_file, {"row_format": "csv"})
    with pytest.raises(DatasetError, match=r"row 1: .*\(is it a skyrl row\?\)"):
        build_app(rows_file, {"row_format": "skyrl"})  # TRL rows read as SkyRL rows
    with pytest.raises(ConfigError, match="no file"):
        build_app(tmp_path / "absent.jsonl", {})
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"prompt": []}\nnot json\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"broken\.jsonl: line 2: not valid JSON"):
        build_app(broken, {})


def test_settings_come_as_json_or_a_file(tmp_path: Path) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text("profile: paper\ntimeout_s: 2\n", encoding="utf-8")
    assert read_settings(str(settings)) == {"profile": "paper", "timeout_s": 2}
    assert read_settings('{"max_turns": 5}') == {"max_turns": 5}
    with pytest.raises(ConfigError, match=r"neither a \.json/\.yaml file nor a JSON object"):
        read_settings("profile=paper")
    with pytest.raises(ConfigError, match="not a mapping"):
        read_settings("[1, 2]")


def test_the_uvicorn_app_names_the_variable_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(app_module.ROWS_VARIABLE, raising=False)
    app_module.app_from_environment.cache_clear()
    with pytest.raises(ConfigError, match=app_module.ROWS_VARIABLE):
        app_module.app  # noqa: B018  # uvicorn's getattr
    with pytest.raises(AttributeError):
        app_module.other  # noqa: B018


def test_step_rewards_reach_the_episodes_and_add_up(rows_file: Path) -> None:
    app = build_app(rows_file, {**SETTINGS, "step_rewards": True})
    with serving.in_process(app) as url, ProgressSQLEnvClient(base_url=url).sync() as env:
        env.reset(index=0)
        steps = [env.step(reply) for reply in ("<sql>SELECT nope FROM singer</sql>", WRONG, RIGHT)]
    assert steps[-1].done
    assert sum(s.reward for s in steps) == pytest.approx(steps[-1].observation.metadata["reward"]["total"])
    assert any(s.reward != 0.0 for s in steps[:2])  # progress shows before the last step


def test_serve_env_runs_the_server_until_stopped(rows_file: Path, tmp_path: Path) -> None:
    """``progress-sql serve-env openenv`` (``python -m progress_sql``: the package is on PYTHONPATH here)
    in a process of its own: the settings it was given reach the episodes."""
    port = serving.free_port()
    argv = [sys.executable, "-m", "progress_sql", "serve-env", "openenv", "--rows", str(rows_file),
            "--port", str(port), "--settings", json.dumps(SETTINGS)]  # fmt: skip
    process = serving.start(argv, port=port, env={}, cwd=tmp_path, log=tmp_path / "log")
    try:
        with ProgressSQLEnvClient(base_url=f"http://127.0.0.1:{port}").sync() as env:
            assert env.reset(index=0).observation.episode["max_turns"] == SETTINGS["max_turns"]
            assert env.step(RIGHT).done
    finally:
        serving.stop(process)
    assert f"at http://127.0.0.1:{port}" in (tmp_path / "log").read_text(encoding="utf-8")
