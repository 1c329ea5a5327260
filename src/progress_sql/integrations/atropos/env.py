"""The refinement environment as an Atropos ``BaseEnv`` (atroposlib 0.4.0): items are exported rows,
a trajectory is one multi-turn episode hosted by :class:`~progress_sql.integrations.hosted.HostedEpisode`
(the model answers through Atropos's own server manager, each turn's ODT feedback is the next user
message, up to T turns), and its score is the episode's progressive reward. Atropos's ``serve``,
``process`` and ``evaluate`` modes drive it: ``python -m progress_sql.integrations.atropos MODE ...``
(docs/atropos.md)."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from atroposlib.envs.base import APIServerConfig, BaseEnv, BaseEnvConfig, ScoredDataItem
from atroposlib.utils.tokenize_for_trainer import tokenize_for_trainer
from pydantic import Field, field_validator, model_validator

from progress_sql.errors import ConfigError
from progress_sql.integrations.atropos.rows import ROW_FORMATS, RowItem, read_items
from progress_sql.integrations.hosted import (
    DEFAULT_EXECUTION_WORKERS,
    HOST_KEYS,
    HostedEpisode,
    HostSettings,
    close_pools,
    host_settings,
    read_settings,
)
from progress_sql.profiles import DEFAULT_PROFILE
from progress_sql.prompts import Message

__all__ = ["PlayedEpisode", "ProgressSQLAtroposConfig", "ProgressSQLAtroposEnv", "episode_marks", "scored_item"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: How an episode ended: the environment ended it (a match or the turn budget), the context ran out
#: first, or it could not be scored (HostedEpisode's ``stop``: a failing gold, a missing database).
STOP_DONE, STOP_CONTEXT = "done", "context"


class ProgressSQLAtroposConfig(BaseEnvConfig):  # type: ignore[misc]
    """Atropos's environment settings plus ours; each is also a ``--env.NAME`` option and an ``env:``
    key of the YAML ``--config`` file. Bad values fail when Atropos builds this config (a pydantic
    ``ValidationError`` naming the field)."""

    rows: str = Field(default="", description="Exported rows (progress-sql export, .jsonl or .parquet)")
    rows_format: str = Field(default="trl", description=f"The rows' format: {', '.join(ROW_FORMATS)}")
    eval_rows: str = Field(default="", description="Exported rows that evaluate() plays (empty: no evaluation)")
    eval_limit: int = Field(default=0, ge=0, description="Evaluate at most this many eval rows (0: all)")
    profile: str = Field(default=DEFAULT_PROFILE, description="Settings profile: progress-sql or paper")
    max_turns: int | None = Field(default=None, ge=1, description="Turn budget T (default: the profile's)")
    # The text form is what Atropos's command line passes (its parser keeps a flag's value as a string);
    # the validator below turns it into the mapping, so after validation this is always a dict.
    env_config: dict[str, Any] | str = Field(
        default_factory=dict, description="EnvConfig fields (docs/environment.md); a JSON object on the command line"
    )
    execution_workers: int = Field(
        default=DEFAULT_EXECUTION_WORKERS, ge=1, description="SQL execution workers (and stepping threads)"
    )
    temperature: float = Field(default=1.0, ge=0.0, description="Sampling temperature of training rollouts")
    eval_temperature: float = Field(default=0.0, ge=0.0, description="Sampling temperature of evaluate()")
    shuffle_rows: bool = Field(default=True, description="Draw the rows in a seeded random order")
    seed: int = Field(default=0, description="The seed of the row order")

    @field_validator("env_config", mode="before")
    @classmethod
    def _env_config_from_json(cls, value: Any) -> Any:
        """Text (what the command line gives) is a JSON object or names a ``.json``/``.yaml`` file of
        settings (``--env.env_config '{"timeout_s": 2}'``); either reads as a mapping."""
        if isinstance(value, str):
            value = read_settings(value, what="env_config")
        if not isinstance(value, Mapping):
            raise ValueError(f"env_config must be a mapping of EnvConfig fields, got {type(value).__name__}")
        return dict(value)

    @property
    def env_settings(self) -> dict[str, Any]:
        """``env_config`` as the mapping the validator made of it."""
        assert isinstance(self.env_config, dict)  # the validator's doing
        return self.env_config

    @field_validator("rows_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in ROW_FORMATS:
            raise ValueError(f"rows_format must be one of {', '.join(ROW_FORMATS)}, got {value!r}")
        return value

    @field_validator("rows", "eval_rows")
    @classmethod
    def _existing_file(cls, value: str) -> str:
        if value and not Path(value).is_file():
            raise ValueError(f"no file {value} (write the rows with progress-sql export)")
        return value

    @model_validator(mode="after")
    def _valid_settings(self) -> ProgressSQLAtroposConfig:
        self.host_settings()  # unknown EnvConfig keys and bad values fail here, not in the first episode
        return self

    def host_settings(self) -> HostSettings:
        """The settings every episode runs with: the profile's, then ``env_config``, then ``max_turns``."""
        own = sorted(set(self.env_settings) & set(HOST_KEYS))
        if own:
            raise ConfigError(
                f"env_config: {', '.join(own)} cannot be set there (profile and execution_workers are settings "
                "of their own; step rewards do not apply: Atropos scores whole sequences)"
            )
        given = {**self.env_settings, "profile": self.profile, "execution_workers": self.execution_workers}
        return host_settings(given, max_turns=self.max_turns)


@dataclass(frozen=True, slots=True)
class PlayedEpisode:
    """One finished episode: the conversation, its score, how it ended (``stop``), the last turn's finish
    reason, the last step's record and the episode's summary (:meth:`HostedEpisode.metrics`)."""

    messages: tuple[Message, ...]
    score: float
    stop: str
    unscored: bool
    finish_reason: str = ""
    record: Mapping[str, Any] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)


class TokenIdsTokenizer:
    """A tokenizer whose ``apply_chat_template`` returns token ids, as atroposlib 0.4.0 expects
    (``tokenize_for_trainer`` takes its length and slices it): transformers 5 returns a BatchEncoding
    unless ``return_dict=False``, which transformers 4 accepts too. Everything else is the tokenizer's."""

    def __init__(self, tokenizer: Any) -> None:
        self.wrapped = tokenizer

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("return_dict", False)
        return self.wrapped.apply_chat_template(conversation, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def episode_marks(played: PlayedEpisode) -> dict[str, Any]:
    """The sequence's ``overrides`` in the group: Atropos's ``set_advantage_to_zero`` on an unscored
    episode (its example trainer zeroes such a sequence's advantage), why it stopped, the reasons of
    an unscored one (``gold_error``, ``database_error``) and the episode's summary, whose ``reward`` is
    the score (also for an episode the context cut, which no final turn scored)."""
    return {
        "set_advantage_to_zero": played.unscored,
        "stop": played.stop,
        "gold_error": str(played.record.get("gold_error", "")),
        "database_error": str(played.record.get("database_error", "")),
        **played.metrics,
        "reward": played.score,
    }


def scored_item(tokenizer: Any, played: PlayedEpisode, *, include_messages: bool) -> ScoredDataItem:
    """The episode as Atropos's ``ScoredDataItem``: the whole conversation's tokens, every assistant
    turn trained (system, user and feedback turns masked -100), the episode's score and its marks."""
    messages = [dict(m) for m in played.messages]
    tokenized = tokenize_for_trainer(
        tokenizer, messages, train_on_all_assistant_turns=True, finish_reason=played.finish_reason
    )
    return ScoredDataItem(
        tokens=tokenized["tokens"],
        masks=tokenized["masks"],
        scores=played.score,
        messages=messages if include_messages else None,
        overrides=episode_marks(played),
    )


def summary(played: Sequence[PlayedEpisode], prefix: str) -> dict[str, float]:
    """Rates over scored episodes (match, mean reward and turns) and the share left unscored."""
    scored = [p for p in played if not p.unscored]
    if not played:
        return {}
    metrics = {f"{prefix}/unscored_rate": (len(played) - len(scored)) / len(played)}
    if scored:
        metrics.update({
            f"{prefix}/match_rate": sum(bool(p.metrics.get("match")) for p in scored) / len(scored),
            f"{prefix}/mean_reward": sum(p.score for p in scored) / len(scored),
            f"{prefix}/mean_turns": sum(int(p.metrics.get("turns", 0)) for p in scored) / len(scored),
            f"{prefix}/context_stop_rate": sum(p.stop == STOP_CONTEXT for p in scored) / len(scored),
        })  # fmt: skip
    return metrics


class ProgressSQLAtroposEnv(BaseEnv):  # type: ignore[misc]
    """Multi-turn Text-to-SQL refinement with ODT feedback and the progressive reward. One trajectory
    per ``collect_trajectory`` (Atropos's default ``collect_trajectories`` gathers ``group_size`` of
    them into a ``ScoredDataGroup``); SQL runs on threads, so a slow query holds one episode only."""

    name = "progress_sql"
    env_config_cls = ProgressSQLAtroposConfig
    tokenizer: Any  # BaseEnv's, wrapped in TokenIdsTokenizer

    def __init__(
        self,
        config: ProgressSQLAtroposConfig,
        server_configs: Any,
        slurm: bool = False,
        testing: bool = False,
    ) -> None:
        super().__init__(config, server_configs, slurm, testing)
        self.tokenizer = TokenIdsTokenizer(self.tokenizer)
        self.settings = config.host_settings()
        # Each step blocks on SQL (the gold once, then each answer): off the event loop, one thread per
        # execution worker, so a pathological query delays its own episode and not the other ones.
        self._stepping = ThreadPoolExecutor(self.settings.execution_workers, thread_name_prefix="progress-sql-step")
        self.items: list[RowItem] = []
        self.eval_items: list[RowItem] = []
        self.iter = 0
        self._played: list[PlayedEpisode] = []
        self._eval_metrics: dict[str, float] = {}

    @classmethod
    def config_init(cls) -> tuple[ProgressSQLAtroposConfig, list[Any]]:
        """Defaults of the CLI: one OpenAI-compatible server (``--openai.*`` overrides it)."""
        config = ProgressSQLAtroposConfig(wandb_name=cls.name, group_size=8, max_token_length=4096)
        server = APIServerConfig(model_name="default", base_url="http://localhost:9001/v1", api_key="x")
        return config, [server]

    async def setup(self) -> None:
        if not self.config.rows:
            raise ConfigError("set the rows to train on: --env.rows FILE (progress-sql export --format trl)")
        self.items = read_items(self.config.rows, self.config.rows_format)
        if self.config.shuffle_rows:
            random.Random(self.config.seed).shuffle(self.items)
        if self.config.eval_rows:
            self.eval_items = read_items(self.config.eval_rows, self.config.rows_format)
        self.iter = 0

    async def get_next_item(self) -> RowItem:
        item = self.items[self.iter % len(self.items)]
        self.iter += 1
        return item

    def save_checkpoint(self, step: int, data: dict[str, Any] | None = None) -> None:
        super().save_checkpoint(step, {**(data or {}), "iter": self.iter})

    async def collect_trajectory(self, item: RowItem) -> tuple[ScoredDataItem, list[Any]]:
        played = await self.play(item, split="train", temperature=self.config.temperature)
        self._played.append(played)
        return scored_item(self.tokenizer, played, include_messages=self.config.include_messages), []

    async def play(self, item: RowItem, *, split: str, temperature: float) -> PlayedEpisode:
        """One episode of ``item``: the model's turn through the server manager, the environment's step
        on a thread, until the environment ends it or the context (``max_token_length``) is full."""
        episode = HostedEpisode(self.settings, item.example, item.fields)
        opening = await self._off_loop(episode.start)
        if episode.unscored:
            # Nothing to generate for: the unscored step (reward 0, stop and reason) runs no SQL.
            step = episode.step("")
            return PlayedEpisode(tuple(item.prompt), 0.0, str(step.metadata["stop"]), True,
                                 record=step.metadata, metrics=episode.metrics())  # fmt: skip
        messages: list[Message] = list(opening)
        while True:
            room = self.config.max_token_length - len(self._prompt_tokens(messages))
            if room < 1:
                # The context is full before the episode ended: the episode so far is its score, as in
                # the TRL and verl loops (SQLRefineEnv.episode_reward).
                score = float(episode.env.episode_reward().total) if episode.last is not None else 0.0
                record = episode.last.to_dict() if episode.last is not None else {}
                return PlayedEpisode(tuple(messages), score, STOP_CONTEXT, False, "length", record, episode.metrics())
            completion = await self.server.chat_completion(
                messages=[dict(m) for m in messages], n=1, max_tokens=room, temperature=temperature, split=split
            )
            choice = completion.choices[0]
            text = choice.message.content or ""  # an empty answer is the model's mistake: data, scored as such
            messages.append({"role": "assistant", "content": text})
            step = await self._off_loop(episode.step, text)
            if step.done:
                return PlayedEpisode(tuple(messages), step.reward, STOP_DONE, False, choice.finish_reason or "",
                                     step.metadata, episode.metrics())  # fmt: skip
            assert step.observation is not None  # an episode that goes on has the next user message
            messages.append(step.observation)

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        tokens = self.tokenizer.apply_chat_template([dict(m) for m in messages], add_generation_prompt=True)
        return list(tokens)

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._stepping, fn, *args)

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        """Play every eval row once (``eval_temperature``, Atropos's eval split of the server) and log
        the match rate, mean reward and turns with Atropos's ``evaluate_log``."""
        items = self.eval_items[: self.config.eval_limit or None]
        if not items:
            logger.info("no eval rows (--env.eval_rows): nothing to evaluate")
            return
        start = time.time()
        played = await asyncio.gather(
            *(self.play(item, split="eval", temperature=self.config.eval_temperature) for item in items)
        )
        metrics = summary(played, "eval")
        self._eval_metrics = dict(metrics)
        samples = [
            {"messages": [dict(m) for m in p.messages], "question": item.example.question, "db_id": item.example.db_id,
             "gold_sql": item.example.gold_sql, "score": p.score, **episode_marks(p)}
            for item, p in zip(items, played, strict=True)
        ]  # fmt: skip
        await self.evaluate_log(
            metrics=metrics,
            samples=samples,
            start_time=start,
            end_time=time.time(),
            generation_parameters={
                "temperature": self.config.eval_temperature,
                "max_turns": self.settings.config.max_turns,
            },
        )

    async def wandb_log(self, wandb_metrics: dict[str, Any] | None = None) -> None:
        metrics = {**(wandb_metrics or {}), **summary(self._played, "train"), **self._eval_metrics}
        self._played, self._eval_metrics = [], {}
        await super().wandb_log(metrics)

    async def process_manager(self) -> None:
        try:
            await super().process_manager()
        finally:
            self.close()

    async def _run_evaluate(self) -> None:
        try:
            await super()._run_evaluate()
        finally:
            self.close()

    def close(self) -> None:
        """Stop the stepping threads and the process's execution workers."""
        self._stepping.shutdown(wait=False, cancel_futures=True)
        close_pools()
