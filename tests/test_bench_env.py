"""bench/env.py's ``--in-process`` runner, the floor of issue 35's turn figure: it has the pool's interface and the
turns played through it are the turns played through the worker pool (the same steps, records and rewards), so the
two figures time the same work."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from progress_sql.env import EnvConfig
from progress_sql.env.core import make_store
from progress_sql.execution.pool import ExecutionPool
from progress_sql.types import Example
from tests.conftest import REPO_ROOT, build_database
from tests.env.conftest import GOLD
from tests.env.test_step_many import SCRIPTS, _play_alone


@pytest.mark.parametrize("protocol", list(SCRIPTS))
def test_turns_in_process_are_the_turns_on_the_worker(
    protocol: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(REPO_ROOT / "bench"))  # bench/env.py imports its _common
    spec = importlib.util.spec_from_file_location("bench_env", REPO_ROOT / "bench" / "env.py")
    assert spec is not None
    assert spec.loader is not None
    bench_env = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_env", bench_env)  # its dataclasses look their module up there
    spec.loader.exec_module(bench_env)
    db = build_database("music.sql", tmp_path)
    music = Example(0, "Which singers from France are over 40?", "music", str(db), GOLD)
    config = EnvConfig(max_turns=3, protocol=protocol, feedback="execution" if protocol == "probe" else "tags")
    with ExecutionPool(workers=1) as pool:
        on_worker = _play_alone(config, make_store(config, pool=pool), music, SCRIPTS[protocol])
    with bench_env.InProcessRunner() as runner:
        in_process = _play_alone(config, make_store(config, pool=runner), music, SCRIPTS[protocol])
    assert runner.closed
    assert in_process == on_worker
    assert sum(len(steps) for steps in on_worker) > len(SCRIPTS[protocol])  # episodes of several turns
