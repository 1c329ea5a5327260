"""The verifiers environment: one ``vf.Env`` whose ``run`` hosts a refinement episode turn by turn.

verifiers 0.4.0 has no ``MultiTurnEnv``: a multi-turn environment is an ``Env`` whose ``run(task,
agents)`` holds an agent's rollout open and answers each reply with the next user turn
(verifiers/v1/env.py:157 ``Env.run``, agent.py:742 ``Agent.interaction``, agent.py:456
``Interaction.turn``; its TextArena taskset does the same with a game engine). Here each reply is one
:meth:`HostedEpisode.step`, the ODT feedback is the next user turn, and the episode's ``done`` ends the
exchange."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import verifiers.v1 as vf

from progress_sql.export.formats import get_format
from progress_sql.integrations.hosted import HostedEpisode, HostedStep, close_pools
from progress_sql.integrations.verifiers.summary import INFO_KEY, episode_summary
from progress_sql.integrations.verifiers.taskset import VerifiersTaskData, VerifiersTasksetConfig


class VerifiersEnvConfig(vf.EnvConfig):  # type: ignore[misc]
    """``--env.*``: the one seat, ``agent``, plays through verifiers' tool-less chat harness (``null``)
    run as a local process (``subprocess``: the chat program runs no model code, so it needs no
    sandbox; verifiers' default is a Prime sandbox); the episode's own turn budget
    (``--env.taskset.settings``) ends the exchange."""

    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime={"type": "subprocess"})


class VerifiersRefinementEnv(vf.Env[VerifiersEnvConfig]):  # type: ignore[misc]
    """Each episode: the row's :class:`HostedEpisode` (its suite, engine, write checks and ``<ask>``
    offer apply), the model's first reply to the exported prompt, then feedback and replies until the
    episode is done. The summary on ``trace.info["progress_sql"]`` is what the task's rubric scores."""

    def __init__(self, config: VerifiersEnvConfig) -> None:
        super().__init__(config)
        taskset = config.taskset
        if not isinstance(taskset, VerifiersTasksetConfig):
            raise TypeError(f"VerifiersRefinementEnv plays progress-sql rows, not the taskset {taskset.id!r}")
        self.settings = taskset.host_settings()
        self._executor: ThreadPoolExecutor | None = None

    async def start(self) -> None:
        self._threads()

    async def stop(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        close_pools()

    def _threads(self) -> ThreadPoolExecutor:
        # Steps run queries and wait on the process's execution pool: off the event loop, on as many
        # threads as that pool has workers, so a slow query holds one thread, not the other episodes.
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.settings.execution_workers, thread_name_prefix="progress-sql")
        return self._executor

    async def _off_loop(self, call: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._threads(), call, *args)

    async def run(self, task: Any, agents: Any) -> None:
        data: VerifiersTaskData = task.data
        row = data.row
        episode = HostedEpisode(self.settings, get_format(data.format).example(row), row)
        await self._off_loop(episode.start)  # the gold runs here; a failing one marks the episode
        steps: list[HostedStep] = []
        times: list[tuple[float, float]] = []
        async with agents.agent.interaction(task) as interaction:
            # written before the exchange closes (verifiers scores the trace at close), also when the
            # agent stops before its first reply (a limit, a failed model call)
            interaction.trace.info[INFO_KEY] = episode_summary(steps, episode.metrics(), episode.marks())
            segment = await interaction.turn()
            while not segment.terminated:
                started = time.time()
                step: HostedStep = await self._off_loop(episode.step, segment.last_reply)
                steps.append(step)
                times.append((started, time.time()))
                interaction.trace.info[INFO_KEY] = episode_summary(steps, episode.metrics(), episode.marks(), times)
                if step.done or step.observation is None:
                    break
                segment = await interaction.turn(step.observation["content"])
