"""verl's ``compute_score``: the trajectory reward that the agent loop computed, read from its record
(scored again only for other weights or a row without a record, then with the row's test suite when it
carries one; docs/training.md).

>>> record = {"turn": 1, "sql": "SELECT 1", "format_ok": True, "exec_status": "ok", "match": True,
...           "verdict": "match", "f": 0.9, "f_struct": 0.9, "f_lex": 0.9, "tags": [], "response": "..."}
>>> scored = compute_score("spider", "...", "SELECT 1", {TURNS_KEY: [record]})
>>> scored["score"], scored["late"], scored["num_turns"]
(2.9, 2.0, 1)
>>> compute_score("spider", "...", "SELECT 1", {TURNS_KEY: [record]}, gamma=0.8, omega_acc=3.0)["late"]
3.0
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any, Literal, get_args

from progress_sql.env.coalesce import reset_coalesced, step_coalesced
from progress_sql.env.core import EnvConfig, SQLRefineEnv, shared_store
from progress_sql.env.records import TurnRecord, trajectory_of
from progress_sql.env.settings import env_config_from_profile
from progress_sql.errors import ConfigError, DatasetError, GoldQueryError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import row_env_config, verl_example
from progress_sql.judge.cache import GoldCache
from progress_sql.profiles import DEFAULT_PROFILE, get_profile
from progress_sql.rewards.progressive import ProgressiveConfig
from progress_sql.rewards.registry import RewardContext, RewardSpec, get_reward
from progress_sql.rewards.tasks import TERM_COMPONENTS
from progress_sql.types import RewardBreakdown, Trajectory, Turn

#: The ``extra_fields`` / ``extra_info`` key of the per-turn record.
TURNS_KEY = "progress_sql_turns"
#: Non-empty when the row's gold query could not be used (the error); such an episode scores 0.
GOLD_ERROR_KEY = "progress_sql_gold_error"
#: Non-empty when the row's database could not be opened on the node (the error); scores 0 as well.
DATABASE_ERROR_KEY = "progress_sql_database_error"
#: ``extra_fields`` key of the agent loop saying why the episode ended (:data:`StopReason`).
#: gold_invalid: the row's gold query fails or times out; database_error: the row's database cannot be
#: opened on this node (a missing file, say). In both the model answers once, unexecuted, and scores 0.
STOP_KEY = "progress_sql_stop"
StopReason = Literal["match", "max_turns", "response_length", "gold_invalid", "database_error"]
STOP_REASONS: tuple[StopReason, ...] = get_args(StopReason)
#: The keys of :func:`compute_score`'s result that describe the trajectory; every other key but
#: ``score`` is a reward component.
TRAJECTORY_KEYS = ("num_turns", "k_star", "first_turn_f", "from_record", "gold_invalid", "database_error")
#: Keyword arguments verl itself may add to the call (reward-model routing); not ours to check.
_VERL_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer"})
_WEIGHTS = frozenset(f.name for f in fields(ProgressiveConfig))


def reward_settings(kwargs: Mapping[str, Any]) -> tuple[str, ProgressiveConfig, str]:
    """The reward name, progressive weights and profile from verl's ``reward_kwargs``: the profile's
    (``profile``, default progress-sql) with ``reward`` and the weights given on top; a typo is a
    ConfigError."""
    unknown = sorted(set(kwargs) - _WEIGHTS - _VERL_KWARGS - {"reward", "profile"})
    if unknown:
        raise ConfigError(
            f"unknown reward_kwargs {', '.join(unknown)}: use 'reward', 'profile' or a ProgressiveConfig weight "
            f"({', '.join(sorted(_WEIGHTS))})"
        )
    profile = get_profile(str(kwargs.get("profile", DEFAULT_PROFILE)))
    name = str(kwargs.get("reward", profile.reward.value))
    get_reward(name)
    weights = {key: kwargs[key] for key in _WEIGHTS if key in kwargs}
    return name, replace(profile.progressive_config(), **weights), profile.name


#: A one-turn trajectory without an answer: its reward's component names, for the all-zero result.
_NO_ANSWER = Trajectory((Turn(sql=None, format_ok=False, executable=False, match=False, f=0.0, response=""),))


class _Shared:
    """One execution pool and gold cache per process for the single-turn fallback (created on first use)."""

    lock = threading.Lock()
    pool: ExecutionPool | None = None
    cache = GoldCache()

    @classmethod
    def get_pool(cls) -> ExecutionPool:
        with cls.lock:
            if cls.pool is None:
                cls.pool = ExecutionPool(workers=1)
            return cls.pool


def _fallback_env(config: EnvConfig) -> SQLRefineEnv:
    """The only place the reward function builds an environment (the process's shared gold store)."""
    return SQLRefineEnv(config, store=shared_store(config, pool=_Shared.get_pool(), cache=_Shared.cache))


def _single_turn(
    solution_str: str,
    ground_truth: str,
    extra_info: Mapping[str, Any],
    reward: str,
    weights: ProgressiveConfig,
    profile: str,
) -> list[TurnRecord]:
    example = verl_example({"extra_info": extra_info, "reward_model": {"ground_truth": ground_truth}})
    config = replace(env_config_from_profile(profile), max_turns=1, reward=reward, progressive=weights,
                     schema_profile="none")  # fmt: skip
    env = _fallback_env(row_env_config(config, extra_info))  # a row exported with --suite judges on its suite
    # verl 0.9.1's reward loop calls compute_score per sample on executor threads (reward_loop/reward_manager/
    # naive.py run_single): the samples scored at once share batches to the worker (env/coalesce.py)
    reset_coalesced(env, example)  # the prompt is not needed: schema_profile none renders no schema
    return [step_coalesced(env, solution_str).info]


def _reward(records: Sequence[TurnRecord], spec: RewardSpec, context: RewardContext) -> RewardBreakdown:
    """The reward the loop carried on its last turn when it was computed as asked, else the record scored."""
    carried = records[-1].reward if records else None
    # A carried reward may add the task terms of asks and writes after the base reward's identity.
    if carried is not None and (carried.version.split("+")[0], carried.config_hash.split("+")[0]) == spec.identity(
        context
    ):
        return carried
    return spec.score(trajectory_of(records), context)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """``{"score": total, <component>: value, ..., "num_turns", "k_star" (0: never), "first_turn_f",
    "from_record" (1: the loop's record, 0: single-turn fallback), "gold_invalid" (1: the gold query
    failed or timed out), "database_error" (1: the database could not be opened)}``, every value 0
    when either flag is set. The same keys for every row: verl passes them on as
    ``reward_extra_info`` and stacks each key over the batch."""
    reward, weights, profile = reward_settings(kwargs)
    spec, context = get_reward(reward), RewardContext(ground_truth, progressive=weights)
    info = extra_info or {}
    recorded: Sequence[Mapping[str, Any]] = info.get(TURNS_KEY) or ()
    records = [TurnRecord.from_dict(record) for record in recorded]
    from_record = len(records) > 0
    gold_error = str(info.get(GOLD_ERROR_KEY) or "")
    database_error = str(info.get(DATABASE_ERROR_KEY) or "")
    if not from_record and not gold_error and not database_error:
        try:
            records = _single_turn(solution_str, ground_truth, info, reward, weights, profile)
        except GoldQueryError as error:
            gold_error = str(error)
        except DatasetError as error:
            database_error = str(error)
    if gold_error or database_error:  # every key present, all zero: GRPO sees no signal, logs count it
        zeros = {name: 0.0 for name, _ in spec.score(_NO_ANSWER, context).components} | dict.fromkeys(
            TERM_COMPONENTS, 0.0
        )
        return {"score": 0.0, **zeros, "num_turns": 0, "k_star": 0, "first_turn_f": 0.0,
                "from_record": int(from_record), "gold_invalid": int(bool(gold_error)),
                "database_error": int(bool(database_error))}  # fmt: skip
    breakdown = _reward(records, spec, context)
    trajectory = trajectory_of(records)
    return {
        "score": breakdown.total,
        **dict.fromkeys(TERM_COMPONENTS, 0.0),  # every row has the same keys: read rows add no task terms
        **dict(breakdown.components),
        "num_turns": len(trajectory.turns),
        "k_star": trajectory.k_star or 0,
        "first_turn_f": trajectory.turns[0].f if trajectory.turns else 0.0,
        "from_record": int(from_record),
        "gold_invalid": 0,
        "database_error": 0,
    }
