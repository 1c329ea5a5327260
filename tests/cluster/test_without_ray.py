"""Without ``--ray`` nothing imports Ray: the commands that have the option run in a fresh interpreter
and Ray is absent from its modules afterwards. With ``--ray`` and no Ray installed, the error says
which extra to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from progress_sql.cluster.synthetic import SyntheticConfig, generate_dataset


def _run(argv: list[str], *, block_ray: bool = False) -> tuple[int, str, set[str]]:
    """``progress-sql ARGV`` in a fresh interpreter: exit code, output, the modules it imported."""
    blocker = "import sys; sys.modules['ray'] = None  # as if Ray were not installed\n" if block_ray else ""
    code = blocker + textwrap.dedent(
        f"""
        import json, sys
        from progress_sql.cli import app
        code = 0
        try:
            app({argv!r}, prog_name="progress-sql")
        except SystemExit as done:
            code = done.code or 0
        print(json.dumps([code, sorted(m for m in sys.modules if sys.modules[m] is not None)]), file=sys.stderr)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    exit_code, modules = json.loads(done.stderr.strip().splitlines()[-1])
    return int(exit_code), done.stdout + done.stderr, set(modules)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("syn")
    return generate_dataset(root, SyntheticConfig(databases=4, questions_per_database=2)).questions


def test_the_commands_import_no_ray_without_the_option(dataset: Path, tmp_path: Path) -> None:
    runs = {
        "audit": ["audit", "--task", str(dataset), "--out", str(tmp_path / "audit"), "--workers", "1", "--json"],
        "eval": ["eval", "--task", str(dataset), "--predictions", str(dataset.parent / "predictions.sql"),
                 "--out", str(tmp_path / "eval"), "--workers", "1", "--no-plots", "--json"],
        "build-suite": ["build-suite", "--task", str(dataset), "--out", str(tmp_path / "suite"), "--pool", "1",
                        "--max-dbs", "2", "--workers", "1", "--json"],
        "export": ["export", "--format", "trl", "--task", str(dataset), "--out", str(tmp_path / "x" / "t.jsonl"),
                   "--workers", "1", "--json"],
    }  # fmt: skip
    for name, argv in runs.items():
        code, output, modules = _run(argv)
        assert code == 0, (name, output[-3000:])
        assert "progress_sql.cli._common" in modules  # the command really ran
        assert not {m for m in modules if m == "ray" or m.startswith("ray.")}, name
        assert "progress_sql.cluster.ray_runner" not in modules, name


def test_the_option_without_ray_installed_names_the_extra(dataset: Path, tmp_path: Path) -> None:
    code, output, _ = _run(
        ["audit", "--task", str(dataset), "--out", str(tmp_path / "a"), "--ray", "auto"], block_ray=True
    )
    assert code == 2
    assert "install the [ray] extra" in output
