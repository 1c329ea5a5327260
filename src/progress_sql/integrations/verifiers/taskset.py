"""The data half of the verifiers environment: a ``vf.Taskset`` over the rows of ``progress-sql export``
and the ``vf.Task`` whose ``@vf.reward`` / ``@vf.metric`` methods are the rubric (verifiers 0.4.0 has no
``Rubric`` class: a task's decorated methods score its trace, verifiers/v1/task.py:213 ``Task.score``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import Field, field_validator, model_validator

from progress_sql.errors import DatasetError
from progress_sql.export.formats import FORMATS, get_format
from progress_sql.integrations.hosted import HostSettings, host_settings, load_rows
from progress_sql.integrations.verifiers.summary import INFO_KEY, summary_metrics, summary_reward

#: The export format whose rows a taskset reads unless told otherwise (JSON Lines, no pyarrow needed).
DEFAULT_FORMAT = "trl"


class VerifiersTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    """``--env.taskset.*``: the exported rows and the environment's settings."""

    rows: Path | None = None
    """A file of ``progress-sql export`` rows: ``.jsonl`` (``--format trl``) or ``.parquet``
    (``--format skyrl`` / ``verl``, read with pyarrow). Needed where tasks are loaded (``vf-eval``, a
    trainer's client), not by an env server, which gets each task whole."""
    format: str = DEFAULT_FORMAT
    """The export format of ``rows`` (trl, skyrl or verl)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """The environment's settings (docs/verifiers.md): ``profile``, any ``EnvConfig`` field
    (``max_turns``, ``timeout_s``, ``feedback``, ``reward``, ``suite``, nested sections as mappings),
    ``step_rewards`` and ``execution_workers``; checked when the config is built."""

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        get_format(value)  # an unknown name raises a ConfigError listing the known ones
        return value

    @model_validator(mode="after")
    def _check(self) -> VerifiersTasksetConfig:
        # The rows file is read by load() alone: an env server gets each task whole and needs none.
        self.host_settings()  # unknown keys and bad values fail before the first episode
        return self

    def host_settings(self) -> HostSettings:
        return host_settings(self.settings)


class VerifiersTaskData(vf.TaskData):  # type: ignore[misc]
    """One exported row; it travels whole on the wire, so an env server rebuilds the episode from it."""

    row: dict[str, Any]
    format: str = DEFAULT_FORMAT

    @model_validator(mode="after")
    def _readable(self) -> VerifiersTaskData:
        get_format(self.format).example(self.row)  # a row without our fields is a DatasetError naming them
        return self


class VerifiersTask(vf.Task[VerifiersTaskData, vf.State, vf.TaskConfig]):  # type: ignore[misc]
    """One refinement episode of one row. The rubric reads the summary the environment leaves on the
    trace: the episode's reward (weight 1, the trace's reward) and metrics that are recorded, not summed
    (match, k*, turns, asks, unscored, format, F and each reward component). verifiers awaits them
    (``asyncio.gather``), so they are coroutines."""

    @vf.reward(weight=1.0)  # type: ignore[untyped-decorator]
    async def progress_reward(self, trace: Any) -> float:
        return summary_reward(trace.info.get(INFO_KEY))

    @vf.metric  # type: ignore[untyped-decorator]
    async def episode(self, trace: Any) -> dict[str, float]:
        return summary_metrics(trace.info.get(INFO_KEY))


def opening(row: Mapping[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """The system prompt and the other opening messages of an exported row (the environment's own
    opening, as exported, so the model sees what the trainers' adapters show it)."""
    messages = row.get("prompt")
    if not isinstance(messages, list) or not messages:
        raise DatasetError("a row lacks its prompt messages: write rows with progress-sql export")
    system = [m for m in messages if m.get("role") == "system"]
    rest = [{"role": m["role"], "content": m["content"]} for m in messages if m.get("role") != "system"]
    return (str(system[0]["content"]) if system else None), rest


def row_task(row: Mapping[str, Any], fmt: str, config: Any) -> VerifiersTask:
    system, messages = opening(row)
    example = FORMATS[fmt].example(row)
    return VerifiersTask(
        VerifiersTaskData(
            id=f"{example.db_id}:{example.index}",
            name=example.question,
            prompt=messages,
            system_prompt=system,
            row=dict(row),
            format=fmt,
        ),
        config,
    )


class VerifiersTaskset(vf.Taskset[VerifiersTask, VerifiersTasksetConfig]):  # type: ignore[misc]
    """The exported rows as tasks, in file order (``--select.*`` picks and shuffles them)."""

    def load(self) -> Iterator[VerifiersTask]:
        if self.config.rows is None:
            raise DatasetError("no rows to play: set --env.taskset.rows to a file of progress-sql export")
        for row in load_rows(self.config.rows):
            yield row_task(row, self.config.format, self.config.task)
