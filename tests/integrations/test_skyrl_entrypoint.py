"""The SkyRL entry point's skyrl-free parts, driven the way skyrl 0.4.0 drives them.

skyrl 0.4.0 needs Python >= 3.12, so the trainer itself is not installed here; the steps it takes are
reproduced from its source (paths inside the skyrl==0.4.0 wheel):

- ``trainer.override_entrypoint=<module>`` makes ``main_base.main`` call ``<module>.main()``
  (skyrl/train/entrypoints/main_base.py:345-358); ours parses the command line, and then
  :func:`~progress_sql.integrations.skyrl_entrypoint.prepare` calls :func:`entry_settings` with
  ``cfg.environment.skyrl_gym.progress_sql`` and ``max_env_workers`` (config.py:1421-1431).
- The config travels to a Ray task (main_base.py:338-342, 366), a fresh worker process, where
  :func:`run_registered` registers the environment and runs ``BasePPOExp(cfg).run()``; the trainer
  is stubbed at that boundary by what SkyRL's generator does with an environment.
- The generator makes each environment on its event-loop thread with
  ``skyrl_gym.make(env_class, env_config=getattr(skyrl_gym_cfg, env_class, dict()), extras=...)``
  after setting ``extras["max_turns"] = generator.max_turns`` (skyrl_gym_generator.py:393-397), and
  runs ``env.init`` / ``env.step`` / ``env.close`` through ``loop.run_in_executor`` on a
  ``ThreadPoolExecutor(max_workers=max_env_workers, thread_name_prefix="skyrl-gym-env-")``
  (:200-203, 286-290, 404, 549, 642).

The real skyrl 0.4.0 path (its config parser, main_base's dispatch) is checked by tests/with_skyrl.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the SkyRL tests need the [skyrl] extra")

from progress_sql.errors import ConfigError  # noqa: E402
from progress_sql.export.build import export_items  # noqa: E402
from progress_sql.export.formats import SKYRL_ENV_CLASS, get_format  # noqa: E402
from progress_sql.integrations.hosted import execution_pool  # noqa: E402
from progress_sql.integrations.skyrl import (  # noqa: E402
    DEFAULT_STEPPING_THREADS,
    close_pools,
    entry_settings,
    run_registered,
)
from progress_sql.types import Example  # noqa: E402
from tests.conftest import build_database  # noqa: E402

GOLD = 'SELECT name FROM singer WHERE country = "France" AND age > 40'
RIGHT = f"<think>filter</think><sql>{GOLD}</sql>"
ENDLESS = (
    "<think>count forever</think>"
    "<sql>WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c</sql>"
)


@pytest.fixture(autouse=True)
def _stop_workers() -> Iterator[None]:
    yield
    close_pools()


@pytest.fixture(scope="module")
def row(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One exported SkyRL row as SkyRL's PromptDataset hands it to the generator."""
    folder = tmp_path_factory.mktemp("skyrl-entry")
    db = build_database("music.sql", folder / "database")
    example = Example(1, "Names of singers from France older than 40?", "music", str(db), GOLD)
    (item,) = export_items([("spider-train", example)])
    return dict(get_format("skyrl").row(item, 0))


def skyrl_cfg(section: dict[str, Any], *, max_env_workers: int = DEFAULT_STEPPING_THREADS, max_turns: int = 3) -> Any:
    """The parts of SkyRL's config the generator reads, shaped as its dataclasses are
    (config.py:1343-1357 ``generator``, :1421-1431 ``environment.skyrl_gym``), after ``prepare``."""
    gym = SimpleNamespace(max_env_workers=max_env_workers, progress_sql=entry_settings(section, max_env_workers))
    return SimpleNamespace(
        environment=SimpleNamespace(env_class=SKYRL_ENV_CLASS, skyrl_gym=gym),
        generator=SimpleNamespace(max_turns=max_turns),
    )


def make_env(cfg: Any, row: dict[str, Any]) -> tuple[Any, list[dict[str, str]]]:
    """skyrl_gym_generator.py:393-397: the row's prompt and env_class out, the rest are extras, the
    generator's turn budget in, and the env_config read off the config by the env_class's name."""
    extras = dict(row)
    prompt, env_class = extras.pop("prompt"), extras.pop("env_class")
    extras["max_turns"] = cfg.generator.max_turns
    env_config = getattr(cfg.environment.skyrl_gym, env_class, dict())
    return skyrl_gym.make(env_class, env_config=env_config, extras=extras), list(prompt)


def test_settings_come_from_the_named_file_then_the_command_line_and_size_the_pool(tmp_path: Path) -> None:
    settings_file = tmp_path / "env.yaml"
    settings_file.write_text("timeout_s: 4.0\nstep_rewards: true\nprogressive:\n  gamma: 0.8\n", encoding="utf-8")
    merged = entry_settings({"settings_file": str(settings_file), "timeout_s": 2.5}, stepping_threads=16)
    assert merged == {"timeout_s": 2.5, "step_rewards": True, "progressive": {"gamma": 0.8}, "execution_workers": 16}
    as_json = tmp_path / "env.json"
    as_json.write_text(json.dumps({"execution_workers": 4, "max_turns": 4}), encoding="utf-8")
    assert entry_settings({"settings_file": str(as_json)}, stepping_threads=32) == {
        "execution_workers": 4, "max_turns": 4}  # fmt: skip
    assert entry_settings({}, stepping_threads=0) == {"execution_workers": 1}  # steps on the loop thread


def test_bad_settings_fail_on_the_head_node_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown progress_sql env_config keys: timeout"):
        entry_settings({"timeout": 5}, stepping_threads=32)
    with pytest.raises(ConfigError, match="no file"):
        entry_settings({"settings_file": str(tmp_path / "absent.yaml")}, stepping_threads=32)
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a mapping"):
        entry_settings({"settings_file": str(listed)}, stepping_threads=32)
    with pytest.raises(ConfigError, match="execution_workers must be >= 1"):
        entry_settings({"execution_workers": -2}, stepping_threads=32)


def _ray_task(cfg: Any, row: dict[str, Any]) -> dict[str, Any]:
    """A Ray worker's view (main_base.py:338-342): a fresh process that has only the config. Before
    the task registers the environment, SkyRL's make fails; the experiment (stubbed at the trainer's
    boundary by what the generator does with one trajectory) then makes and steps it."""

    def experiment_run() -> dict[str, Any]:
        env, prompt = make_env(cfg, row)
        env.init(prompt)
        step = env.step(RIGHT)
        env.close()
        return {"reward": step["reward"], "done": step["done"], "match": step["metadata"]["match"],
                "max_turns": env.max_turns, "timeout_s": env.config.timeout_s, "gamma": env.config.progressive.gamma,
                "workers": env.env.store.pool.size}  # fmt: skip

    try:
        make_env(cfg, row)
        unregistered = ""
    except Exception as error:  # skyrl_gym's own error for an unknown id
        unregistered = type(error).__name__
    result = run_registered(experiment_run)
    close_pools()
    return {**result, "unregistered": unregistered}


def test_the_task_registers_the_environment_in_its_own_process(row: dict[str, Any]) -> None:
    cfg = skyrl_cfg({"timeout_s": 4.0, "progressive": {"gamma": 0.8}}, max_env_workers=6, max_turns=4)
    spawn = multiprocessing.get_context("spawn")  # a fresh interpreter that may start processes, as a Ray worker
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as worker:
        result = worker.submit(_ray_task, cfg, row).result(timeout=300)
    assert result["unregistered"] == "Error"  # skyrl_gym.error.Error: the id is unknown until registered
    assert (result["done"], result["match"]) == (True, True)
    assert result["reward"] > 0
    assert (result["max_turns"], result["timeout_s"], result["gamma"], result["workers"]) == (4, 4.0, 0.8, 6)


async def _agent_loops(
    envs: Sequence[Any], prompt: list[dict[str, str]], actions: Sequence[str], executor: ThreadPoolExecutor,
    slow_started: asyncio.Event, fast_done: asyncio.Event, finished: list[int],
) -> list[Any]:  # fmt: skip
    """Each trajectory's env.init and first env.step through the executor, as agent_loop does; the
    fast ones step once the slow query holds a worker."""
    loop = asyncio.get_running_loop()
    fast = sum(action != ENDLESS for action in actions)

    async def one(index: int) -> Any:
        await loop.run_in_executor(executor, envs[index].init, prompt)
        if actions[index] != ENDLESS:
            await slow_started.wait()
        step = await loop.run_in_executor(executor, envs[index].step, actions[index])
        finished.append(index)
        if sum(actions[i] != ENDLESS for i in finished) == fast:
            fast_done.set()
        return step

    return await asyncio.gather(*(one(i) for i in range(len(envs))))


def test_eight_trajectories_on_skyrls_threads_one_slow_query_stalls_none_of_the_others(
    row: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    threads = 8
    # The slow query would run ten minutes: the test ends it by killing its worker once the fast ones are done
    # (a shorter deadline could expire first on a loaded machine, where starting 8 workers takes a while).
    cfg = skyrl_cfg({"timeout_s": 600.0}, max_env_workers=threads)
    assert cfg.environment.skyrl_gym.progress_sql["execution_workers"] == threads
    loop = asyncio.new_event_loop()
    slow_started, fast_done = asyncio.Event(), asyncio.Event()
    finished: list[int] = []
    slow_pids: list[int] = []
    fast_pids: list[int] = []
    ending: list[bool] = []
    pool = execution_pool(threads)  # the one the environments get
    run_many = pool.run_many

    def observed(jobs: Sequence[Any], **callbacks: Any) -> Any:
        """The pool's own ``on_start`` hook tells which worker took which query."""

        def started(index: int, pid: int) -> None:
            slow = "RECURSIVE" in jobs[index].sql
            if (slow or slow_pids) and not ending:  # the queries that ran beside the slow one
                (slow_pids if slow else fast_pids).append(pid)
            if slow and ending:  # a pool that reruns a query whose worker died: end the rerun too
                os.kill(pid, signal.SIGKILL)
            if slow:
                loop.call_soon_threadsafe(slow_started.set)
            if callbacks.get("on_start") is not None:
                callbacks["on_start"](index, pid)

        return run_many(
            jobs, on_start=started, on_result=callbacks.get("on_result"), meanwhile=callbacks.get("meanwhile")
        )

    monkeypatch.setattr(pool, "run_many", observed)
    actions = [ENDLESS] + [RIGHT] * (threads - 1)
    run_registered(lambda: None)  # the Ray task's registration; the generator's work follows

    async def generate() -> tuple[list[int], list[Any]]:
        envs = [make_env(cfg, row)[0] for _ in range(threads)]  # made on the event-loop thread
        prompt = make_env(cfg, row)[1]
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="skyrl-gym-env-") as executor:
            task = asyncio.ensure_future(
                _agent_loops(envs, prompt, actions, executor, slow_started, fast_done, finished)
            )
            try:
                # Generous: on a loaded machine, starting the seven fast steps' workers takes a while.
                await asyncio.wait_for(fast_done.wait(), timeout=900)
            finally:
                when_fast_done = list(finished)
                ending.append(True)
                for pid in slow_pids[:1]:  # end the slow query now instead of at its deadline
                    os.kill(pid, signal.SIGKILL)
            steps = await asyncio.wait_for(task, timeout=300)
        return when_fast_done, steps

    try:
        when_fast_done, steps = loop.run_until_complete(generate())
    finally:
        loop.close()
    # all seven fast trajectories stepped while the slow query (trajectory 0) was still running
    assert sorted(when_fast_done) == list(range(1, threads))
    assert all(step["metadata"]["match"] and step["done"] for step in steps[1:])
    assert steps[0]["metadata"]["exec_status"] == "error"  # its worker was killed: data, not an exception
    assert "died" in steps[0]["metadata"]["exec_error"]
    assert steps[0]["done"] is False
    assert len(fast_pids) == threads - 1  # one query per fast step, none on the slow query's worker
    assert set(slow_pids).isdisjoint(fast_pids)
    assert pool.size == threads
