"""docs/nemo-gym.md's commands run as written: the export and the conversion, the settings file, the
server started with them, the Python client scoring a response against it; the launcher's ``app.py``
and config are checked against the server's own classes (``gym run`` itself builds uv environments
from the network and is not run)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from nemo_gym.config_types import DatasetConfig
from omegaconf import OmegaConf
from responses_api_agents.gymnasium_agent.app import GymnasiumAgentConfig

from progress_sql.integrations.nemo_gym.server import ProgressSQLResourcesServerConfig
from tests.conftest import build_database
from tests.test_docs_snippets import Block, code_blocks
from tests.with_nemo_gym.conftest import REPO_ROOT, free_port, src_environment, stop, wait_until_up

DOC = "docs/nemo-gym.md"
#: Makes the page's ``progress-sql`` the command of this checkout (src/ on PYTHONPATH).
CLI = 'progress-sql() { python -m progress_sql "$@"; }\n'


def blocks(language: str) -> list[Block]:
    return [b for b in code_blocks(DOC) if b.language == language]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with ``data/spider`` in Spider's layout (the music database and its questions)."""
    spider = tmp_path / "data" / "spider"
    build_database("music.sql", spider / "database")
    shutil.copy(REPO_ROOT / "tests" / "fixtures" / "music_questions.json", spider / "train_spider.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def bash(code: str, cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", CLI + code], cwd=cwd, env=src_environment(),
                          capture_output=True, text=True, timeout=300, check=False, **kwargs)  # fmt: skip


def test_the_pages_commands_export_serve_and_score(workdir: Path) -> None:
    install, rows, serve = blocks("bash")
    assert "pip install" in install.code
    assert "side_venv.sh nemo_gym" in install.code
    done = bash(rows.code, workdir)
    assert done.returncode == 0, done.stderr + done.stdout
    converted = [json.loads(line) for line in (workdir / "data/nemo_gym/train.jsonl").read_text().splitlines()]
    assert converted
    assert {row["agent_ref"]["name"] for row in converted} == {"progress_sql_simple_agent"}
    assert all(row["responses_create_params"]["input"][0]["role"] == "system" for row in converted)

    settings, *_ = blocks("yaml")
    (workdir / "nemo_gym.yaml").write_text(settings.code, encoding="utf-8")
    port = free_port()
    assert "--port 8000" in serve.code
    process = subprocess.Popen(["bash", "-c", CLI + "exec " + serve.code.replace("--port 8000", f"--port {port}")],
                               cwd=workdir, env=src_environment(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        wait_until_up(f"http://127.0.0.1:{port}", process)
        (client,) = blocks("python")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(client.code.replace(":8000", f":{port}"), client.name, "exec"), {})
    finally:
        output = stop(process)
    reward, match, components = printed.getvalue().split(" ", 2)
    assert converted[0]["question"] == "How many singers do we have?"
    assert (float(reward) > 0, match) == (True, "True"), output  # the page's answer is the first row's gold
    assert "align" in components
    assert "Uvicorn running" in output or "Application startup complete" in output


def test_the_launchers_app_and_config_name_our_server() -> None:
    app, config = (b.code for b in blocks("text"))
    compile(app, "app.py", "exec")
    assert "ProgressSQLResourcesServer.run_webserver()" in app
    parsed = OmegaConf.to_container(OmegaConf.create(config))
    assert isinstance(parsed, dict)
    server = parsed["progress_sql_resources_server"]["resources_servers"]["progress_sql"]
    checked = ProgressSQLResourcesServerConfig.model_validate(
        {**server, "host": "127.0.0.1", "port": 1, "name": "progress_sql_resources_server"}
    )
    assert (checked.profile, checked.env_config) == ("progress-sql", {"max_turns": 3, "timeout_s": 5})
    agent = parsed["progress_sql_gymnasium_agent"]["responses_api_agents"]["gymnasium_agent"]
    agent_config = GymnasiumAgentConfig.model_validate(
        {**agent, "host": "127.0.0.1", "port": 2, "name": "progress_sql_gymnasium_agent"}
    )
    assert agent_config.resources_server.name == "progress_sql_resources_server"
    assert agent_config.max_steps >= checked.env_config["max_turns"]
    (dataset,) = (DatasetConfig.model_validate(d) for d in agent["datasets"])  # the launcher's dataset entry
    assert (dataset.type, dataset.jsonl_fpath) == ("train", "data/nemo_gym/train.jsonl")
