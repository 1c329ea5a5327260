"""verl 0.9.1 agent loop: the Progress-SQL refinement protocol inside verl's rollout workers.

For each dataset row the loop builds the prompt tokens from the row's chat messages, then for at
most T turns: generates one answer, extracts and executes its SQL and diagnoses it with the ODT
(``SQLRefineEnv.step``), stops when the result matches the gold, and otherwise appends the ODT
feedback as a user message whose tokens get response mask 0 (only the model's own tokens are
trained). The per-turn record (SQL, execution status, match, alignment F, ...) goes into
``extra_fields[TURNS_KEY]``; verl hands it to ``compute_score`` (:mod:`.reward`) in ``extra_info``.

Environment work (gold preparation, SQL execution, ODT) runs on a thread executor shared by the
loops of a worker process, and every query runs in the shared isolated :class:`ExecutionPool`,
whose workers serve concurrent callers: one slow query occupies one worker and never blocks the
event loop or the other trajectories.

Registered through ``agent_loops.yaml`` (``actor_rollout_ref.rollout.agent.agent_loop_config_path``)
under :data:`AGENT_NAME`; extra keys there arrive as constructor arguments.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput
from verl.utils.profiler import simple_timer

from progress_sql.env.core import EnvConfig, FeedbackLevel, SQLRefineEnv
from progress_sql.errors import GoldQueryError
from progress_sql.execution.cache import GoldCache
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.verl.reward import GOLD_ERROR_KEY, TURNS_KEY, turn_record
from progress_sql.integrations.verl.rows import example_from_row

T = TypeVar("T")

#: ``extra_fields`` key saying why the episode ended: match, max_turns, response_length or gold_invalid
#: (the row's gold query fails or times out: the model answers once, unexecuted, and scores 0).
STOP_KEY = "progress_sql_stop"


@dataclass(frozen=True, slots=True)
class EnvResources:
    """What every loop of one worker process shares: the execution pool, the gold cache and the
    threads that run environment steps off the event loop."""

    pool: ExecutionPool
    cache: GoldCache
    threads: ThreadPoolExecutor


_resources: dict[tuple[int, int], EnvResources] = {}
_resources_lock = threading.Lock()


def env_resources(execution_workers: int | None = None, env_threads: int | None = None) -> EnvResources:
    """The process-wide resources for these sizes (created on first use). Defaults: one execution
    worker per core up to 8 (verl runs several agent-loop workers per node, each with its own pool),
    and four more threads than workers, so ODT work overlaps with queries."""
    workers = execution_workers or min(8, os.cpu_count() or 1)
    threads = env_threads or workers + 4
    with _resources_lock:
        shared = _resources.get((workers, threads))
        if shared is None:
            shared = EnvResources(
                ExecutionPool(workers=workers),
                GoldCache(),
                ThreadPoolExecutor(max_workers=threads, thread_name_prefix="progress-sql-env"),
            )
            _resources[(workers, threads)] = shared
        return shared


class ProgressSQLAgentLoop(AgentLoopBase):  # type: ignore[misc]  # verl is not type-checked
    """One Progress-SQL episode per ``run``; construct it inside the running event loop (verl does)."""

    def __init__(
        self,
        *args: Any,
        max_turns: int = 4,
        preset: str = "strict",
        feedback: FeedbackLevel = "tags",
        timeout_s: float = 10.0,
        execution_workers: int | None = None,
        env_threads: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.env_config = EnvConfig(max_turns=max_turns, preset=preset, feedback=feedback, timeout_s=timeout_s)
        self.resources = env_resources(execution_workers, env_threads)
        self.response_length = int(self.rollout_config.response_length)

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        result: T = await self.loop.run_in_executor(self.resources.threads, fn, *args)
        return result

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        messages: list[dict[str, Any]] = [dict(m) for m in kwargs["raw_prompt"]]
        example = example_from_row(kwargs.get("extra_info") or {}, kwargs.get("reward_model") or {})
        env = SQLRefineEnv(self.env_config, pool=self.resources.pool, cache=self.resources.cache)
        metrics: dict[str, Any] = {}
        gold_error: str | None = None
        with simple_timer("tool_calls", metrics):
            try:
                await self._off_loop(env.reset, example)  # runs the gold query once per (db, SQL)
            except GoldQueryError as error:  # one bad row must not end a long training run
                gold_error = str(error)
        prompt_ids: list[int] = await self.ct_build_initial_tokens(messages)
        runtime_ids = list(prompt_ids)
        mask: list[int] = []
        want_logprobs = bool(sampling_params.get("logprobs"))
        logprobs: list[float] | None = [] if want_logprobs else None
        records: list[dict[str, Any]] = []
        request_id = uuid4().hex
        stop = "max_turns"
        answers = feedback_turns = 0
        for _ in range(self.env_config.max_turns):
            budget = self.response_length - len(mask)
            if budget <= 0:
                stop = "response_length"
                break
            with simple_timer("generate_sequences", metrics):
                output = await self.server_manager.generate(
                    request_id=request_id,
                    prompt_ids=runtime_ids,
                    sampling_params={**sampling_params, "max_tokens": budget},
                )
            merged, mask, logprobs = await self.ct_merge_assistant_token(
                runtime_ids,
                output.token_ids,
                mask,
                logprobs,
                assistant_logprobs=output.log_probs if want_logprobs else None,
            )
            runtime_ids = merged.token_ids
            answers += 1
            text = self.tokenizer.decode(output.token_ids, skip_special_tokens=True)
            if gold_error is not None:  # nothing to compare with: one turn, scored 0 (GOLD_ERROR_KEY)
                stop = "gold_invalid"
                break
            with simple_timer("tool_calls", metrics):
                step = await self._off_loop(env.step, text)
            records.append(turn_record(step.info, text))
            if step.terminated or step.truncated:
                stop = "match" if step.terminated else "max_turns"
                break
            assert step.observation is not None
            previous = [*messages, {"role": "assistant", "content": text}]
            messages = [*previous, {"role": "user", "content": step.observation["content"]}]
            merged, mask, logprobs = await self.ct_merge_context_msg(previous, messages, runtime_ids, mask, logprobs)
            runtime_ids = merged.token_ids
            feedback_turns += 1
        response_ids = runtime_ids[len(runtime_ids) - len(mask) :]
        prompt_ids = runtime_ids[: len(runtime_ids) - len(mask)]
        limit = self.response_length
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids[:limit],
            response_mask=mask[:limit],
            response_logprobs=logprobs[:limit] if logprobs is not None else None,
            num_turns=1 + answers + feedback_turns,  # verl counts every message, the prompt as one
            metrics=metrics,
            extra_fields={
                TURNS_KEY: records,
                STOP_KEY: stop,
                GOLD_ERROR_KEY: gold_error or "",
                "turn_scores": [],
                "tool_rewards": [],
            },
        )
