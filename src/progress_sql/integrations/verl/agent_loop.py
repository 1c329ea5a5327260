"""verl 0.9.1 agent loop: the Progress-SQL refinement protocol inside verl's rollout workers, the
trajectory reward computed once and carried to ``compute_score`` (protocol and ``agent_loops.yaml``
keys: docs/training.md). Environment work runs on a shared thread executor, so a slow query never
blocks the event loop."""

from __future__ import annotations

import inspect
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput
from verl.experimental.agent_loop.tool_agent_loop import SPEC_DECODE_EXTRA_KEYS
from verl.utils.profiler import simple_timer

from progress_sql.env.coalesce import reset_coalesced, step_coalesced
from progress_sql.env.core import EnvConfig, SQLRefineEnv, shared_store
from progress_sql.env.records import TurnRecord
from progress_sql.env.settings import ENV_FIELDS
from progress_sql.errors import ConfigError, DatasetError, GoldQueryError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import row_env_config, verl_example
from progress_sql.integrations.verl.reward import DATABASE_ERROR_KEY, GOLD_ERROR_KEY, STOP_KEY, TURNS_KEY, StopReason
from progress_sql.integrations.verl.settings import loop_env_config, loop_profile
from progress_sql.judge.cache import GoldCache

T = TypeVar("T")

__all__ = ["STOP_KEY", "ProgressSQLAgentLoop", "merge_generation_fields"]

#: Constructor arguments that verl itself passes (``AgentLoopBase``'s, and hydra's ``tools`` and ``name``).
_VERL_ARGS = frozenset(inspect.signature(AgentLoopBase.__init__).parameters) - {"self", "kwargs"} | {"tools", "name"}


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


def merge_generation_fields(so_far: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    """The trajectory's generation fields after one more turn's ``TokenOutput.extra_fields``, merged as
    verl 0.9.1's ToolAgentLoop does (``tool_agent_loop.py`` ``_handle_generating_state``): the first
    turn's fields as they are (``global_steps``, ``min_global_steps``, ``max_global_steps``,
    ``num_cached_tokens``, ...), then each later turn's ``max_global_steps`` and the summed
    speculative-decoding counts. The v1 trainer turns ``min/max_global_steps`` into integer tags
    (``agent_loop_tq.py`` ``_agent_loop_postprocess``; ``trainer_base.py`` ``_compute_metrics``)."""
    if not so_far:
        return dict(turn)
    merged = dict(so_far)
    max_global_steps = turn.get("max_global_steps")
    if max_global_steps:  # as upstream: a falsy version (None, 0) leaves the first turn's
        merged["max_global_steps"] = max_global_steps
    for key in SPEC_DECODE_EXTRA_KEYS:
        if key in turn and key in merged:
            merged[key] = int(merged[key]) + int(turn[key])
    return merged


class ProgressSQLAgentLoop(AgentLoopBase):  # type: ignore[misc]  # verl is not type-checked
    """One Progress-SQL episode per ``run``; construct it inside the running event loop (verl does)."""

    def __init__(
        self,
        *args: Any,
        execution_workers: int | None = None,
        env_threads: int | None = None,
        profile: str | None = None,
        **kwargs: Any,
    ) -> None:
        settings = {key: kwargs.pop(key) for key in list(kwargs) if key in ENV_FIELDS}
        unknown = sorted(set(kwargs) - _VERL_ARGS)
        if unknown:
            raise ConfigError(
                f"unknown agent_loops.yaml keys: {', '.join(unknown)} (execution_workers, env_threads, profile or an "
                f"EnvConfig field: {', '.join(ENV_FIELDS)})"
            )
        super().__init__(*args, **kwargs)
        self.env_config = loop_env_config(settings, loop_profile(profile, self.config))
        self.resources = env_resources(execution_workers, env_threads)
        self.response_length = int(self.rollout_config.response_length)

    def _env(self, config: EnvConfig) -> SQLRefineEnv:
        """The only place the loop builds an environment: on the process's one gold store for this
        config over the shared pool and cache, so each example's gold is prepared once per process."""
        return SQLRefineEnv(config, store=shared_store(config, pool=self.resources.pool, cache=self.resources.cache))

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        result: T = await self.loop.run_in_executor(self.resources.threads, fn, *args)
        return result

    def _with_reward(self, records: list[TurnRecord], env: SQLRefineEnv, gold_sql: str) -> list[TurnRecord]:
        """``records`` with the trajectory reward on the last turn: the environment's when the episode
        ended there, else (the response budget ran out first) the trajectory so far, scored once here."""
        if not records or records[-1].reward is not None:
            return records
        # The environment's own scoring: its answers, plus the task terms of asks and writes.
        return [*records[:-1], replace(records[-1], reward=env.episode_reward())]

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        messages: list[dict[str, Any]] = [dict(m) for m in kwargs["raw_prompt"]]
        example = verl_example(kwargs)
        env = self._env(row_env_config(self.env_config, kwargs))  # a row exported with --suite carries one
        metrics: dict[str, Any] = {}
        gold_error: str | None = None
        database_error: str | None = None
        with simple_timer("tool_calls", metrics):
            try:
                # runs the gold query once per (db, SQL), in one batch with the loops that reset meanwhile
                await self._off_loop(reset_coalesced, env, example)
            except GoldQueryError as error:  # one bad row must not end a long training run
                gold_error = str(error)
            except DatasetError as error:  # nor one node without the row's database
                database_error = str(error)
        prompt_ids: list[int] = await self.ct_build_initial_tokens(messages)
        runtime_ids = list(prompt_ids)
        mask: list[int] = []
        want_logprobs = bool(sampling_params.get("logprobs"))
        logprobs: list[float] | None = [] if want_logprobs else None
        records: list[TurnRecord] = []
        generation: dict[str, Any] = {}
        request_id = uuid4().hex
        stop: StopReason = "max_turns"
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
            generation = merge_generation_fields(generation, output.extra_fields)
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
            if database_error is not None:  # nothing to run on: one turn, scored 0 (DATABASE_ERROR_KEY)
                stop = "database_error"
                break
            with simple_timer("tool_calls", metrics):
                # in one batch with the turns of the other loops of this worker stepped meanwhile
                step = await self._off_loop(step_coalesced, env, text)
            records.append(step.info)
            if step.terminated or step.truncated:
                stop = "match" if step.terminated else "max_turns"
                break
            assert step.observation is not None
            previous = [*messages, {"role": "assistant", "content": text}]
            messages = [*previous, {"role": "user", "content": step.observation["content"]}]
            merged, mask, logprobs = await self.ct_merge_context_msg(previous, messages, runtime_ids, mask, logprobs)
            runtime_ids = merged.token_ids
            feedback_turns += 1
        records = self._with_reward(records, env, example.gold_sql)
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
                **generation,  # the model-version fields verl's trainer reads, as its own loops copy them
                TURNS_KEY: [record.to_dict() for record in records],
                STOP_KEY: stop,
                GOLD_ERROR_KEY: gold_error or "",
                DATABASE_ERROR_KEY: database_error or "",
                "turn_scores": [],
                "tool_rewards": [],
            },
        )
