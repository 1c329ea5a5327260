"""What the verifiers tests share: exported rows on a real SQLite database, the taskset's plugin module
on the path, and ``vf-eval`` run as a user runs it (its own console script, in a subprocess)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from progress_sql.export.build import export_items, write_export
from progress_sql.export.formats import get_format
from progress_sql.types import Example
from tests.conftest import REPO_ROOT, build_database

#: The id users give ``vf-eval``: verifiers imports it as the module ``progress_sql_verifiers``.
TASKSET_ID = "progress-sql-verifiers"
PLUGIN_MODULE = "progress_sql_verifiers"
#: The plugin module's text. verifiers 0.4.0 imports a taskset by a top-level name (``owner/name`` ->
#: ``name``; a dotted path fails in its importlib.util.find_spec of ``verifiers.v1.tasksets.<id>``), so
#: the package needs this one-line module beside ``progress_sql`` (docs/verifiers.md); where it is not
#: installed the tests write it into a folder on PYTHONPATH.
PLUGIN_SOURCE = (
    "from progress_sql.integrations.verifiers import *  # noqa: F403\n"
    "from progress_sql.integrations.verifiers import __all__  # noqa: F401\n"
)

FRANCE = "What are the names of singers from France older than 40?"
FRANCE_GOLD = 'SELECT name FROM singer WHERE country = "France" AND age > 40'
COUNT = "How many singers do we have?"
COUNT_GOLD = "SELECT count(*) FROM singer"
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
GOLDS = {FRANCE: FRANCE_GOLD, COUNT: COUNT_GOLD}


def scripted_answer(question: str, replies: int, last: str) -> str:
    """The scripted model: all singers for the France question at first (the ODT then names the
    missing filter), the gold after feedback; the count question right at once."""
    if question == FRANCE and replies == 0:
        return "SELECT name FROM singer"
    return GOLDS[question]


def write_rows(folder: Path, examples: list[Example], *, broken_gold: int | None = None) -> Path:
    """``progress-sql export --format trl`` rows of ``examples`` (the code the command runs); the row
    at ``broken_gold`` then gets a gold that fails, as a stale export would."""
    out = folder / "rows.jsonl"
    write_export(export_items([("music", e) for e in examples]), get_format("trl"), out)
    if broken_gold is not None:
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        rows[broken_gold]["gold_sql"] = "SELECT nme FROM nowhere"
        out.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return out


def music_examples(folder: Path) -> list[Example]:
    db = str(build_database("music.sql", folder / "database"))
    return [Example(0, FRANCE, "music", db, FRANCE_GOLD), Example(1, COUNT, "music", db, COUNT_GOLD)]


def plugin_path(folder: Path) -> list[str]:
    """The folders to put on PYTHONPATH so that verifiers finds the taskset: ``src`` and, unless the
    plugin module is installed, a folder holding it."""
    paths = [str(REPO_ROOT / "src")]
    spec = importlib.util.find_spec(PLUGIN_MODULE)
    if spec is not None and spec.origin:  # installed, in src/, or written by an earlier test of this process
        paths.append(str(Path(spec.origin).parent))
    else:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{PLUGIN_MODULE}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
        paths.append(str(folder))
    return paths


def plugin_on_path(folder: Path) -> None:
    """The same for this process (the env-server tests load the environment here)."""
    for path in plugin_path(folder):
        if path not in sys.path:
            sys.path.insert(0, path)


def side_env(folder: Path) -> dict[str, str]:
    """The environment ``vf-eval`` runs in: this interpreter's scripts first on PATH (verifiers' harness
    runs ``uv`` from there), the plugin on PYTHONPATH, a key for the scripted endpoint."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(plugin_path(folder / "plugin")),
        "SCRIPTED_SQL_KEY": "unused",
        "PRIME_RUNS_MODE": "disabled",
    }


def vf_eval(args: list[str], folder: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``vf-eval ARGS`` from the repository root, its output captured."""
    command = [str(Path(sys.executable).parent / "vf-eval"), *args]
    return subprocess.run(command, cwd=REPO_ROOT, env=side_env(folder), capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


def traces(run_dir: Path) -> list[dict[str, Any]]:
    """The traces a ``vf-eval`` run wrote (``traces.jsonl``: one episode per line)."""
    files = list(run_dir.rglob("traces.jsonl"))
    assert len(files) == 1, files
    episodes = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines() if line.strip()]
    return [trace for episode in episodes for trace in episode["traces"]]
