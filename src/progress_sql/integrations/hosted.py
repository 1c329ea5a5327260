"""Episodes hosted for a framework that drives them turn by turn: the one trainer-free place that the
SkyRL environment and the environment standards' adapters (OpenEnv, verifiers, NeMo Gym, Atropos)
share. It reads the settings a framework passes (the profile's, then the framework's keys), keeps one
execution pool per process, and turns a failing gold or a missing database into one unscored step
(reward 0, the reason in the metadata) instead of an exception that would end a whole batch."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from progress_sql.env.coalesce import reset_coalesced, step_coalesced
from progress_sql.env.core import EnvConfig, SQLRefineEnv, shared_store
from progress_sql.env.records import TurnRecord
from progress_sql.env.settings import env_config_from_profile
from progress_sql.errors import ConfigError, DatasetError, GoldQueryError
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.formats import get_format, row_env_config
from progress_sql.jsonio import parse, read_json_lines
from progress_sql.judge.cache import GoldCache
from progress_sql.profiles import DEFAULT_PROFILE
from progress_sql.prompts import Message
from progress_sql.types import Example

#: The pool size when nothing says otherwise: SkyRL's default number of threads that step environments
#: (``environment.skyrl_gym.max_env_workers``, skyrl@0.4.0 skyrl/train/config/config.py:1422).
DEFAULT_EXECUTION_WORKERS = 32
#: Settings of a hosted episode that are not :class:`EnvConfig` fields.
HOST_KEYS = ("profile", "step_rewards", "execution_workers")

_pools: dict[int, ExecutionPool] = {}
_pools_lock = threading.Lock()
_cache = GoldCache()


@dataclass(frozen=True, slots=True)
class HostSettings:
    """What one hosted episode runs with: the episode's :class:`EnvConfig`, whether each step gets the
    change of the reward so far (``step_rewards``), and the size of the process's execution pool."""

    config: EnvConfig
    step_rewards: bool
    execution_workers: int


def host_settings(given: Mapping[str, Any], *, max_turns: int | None = None) -> HostSettings:
    """The settings of ``given`` (``profile``, default progress-sql, docs/profiles.md; the
    :data:`HOST_KEYS`; any :class:`EnvConfig` field, nested sections as mappings), with the turn budget
    a framework passes apart (``max_turns``) winning. Unknown keys and bad values raise
    :class:`ConfigError`."""
    values = dict(given)
    profile = str(values.pop("profile", None) or DEFAULT_PROFILE)
    step_rewards = bool(values.pop("step_rewards", False))
    workers = int(values.pop("execution_workers", None) or DEFAULT_EXECUTION_WORKERS)
    if workers < 1:
        raise ConfigError(f"execution_workers must be >= 1, got {workers}")
    if max_turns is not None:
        values["max_turns"] = int(max_turns)
    config = env_config_from_profile(profile, values, source="progress_sql env_config")
    return HostSettings(config, step_rewards, workers)


def execution_pool(workers: int) -> ExecutionPool:
    """The process's execution pool with ``workers`` workers (made on first use). Frameworks make many
    environments and step them on many threads: one pool of as many workers serves them all, so one
    slow query holds up one worker, not the other trajectories. Workers start when first needed."""
    with _pools_lock:
        pool = _pools.get(workers)
        if pool is None or pool.closed:
            pool = _pools[workers] = ExecutionPool(workers=workers)
        return pool


def close_pools() -> None:
    """Stop every execution worker the hosted episodes of this process started."""
    with _pools_lock:
        for pool in _pools.values():
            pool.close()
        _pools.clear()


def hosted_env(settings: HostSettings, config: EnvConfig | None = None) -> SQLRefineEnv:
    """An environment on the process's one gold store for ``config`` (default: the settings') over the
    process's pool of the settings' size and the process's gold cache."""
    config = config or settings.config
    pool = execution_pool(settings.execution_workers)
    return SQLRefineEnv(config, store=shared_store(config, pool=pool, cache=_cache))


def missing_database(db_path: str) -> str:
    return f"database not found: {db_path} (the row is unverified: put the database there or export without it)"


@dataclass(frozen=True, slots=True)
class HostedStep:
    """One step as a framework sees it: the next user message (None when the episode is over), the
    reward (the episode's at the end; with ``step_rewards`` the change of the reward so far), whether
    the episode is over, and the turn's record as a dict (with ``gold_error``/``database_error`` and
    ``stop`` on an unscored step)."""

    observation: Message | None
    reward: float
    done: bool
    metadata: dict[str, Any] = field(default_factory=dict)


class HostedEpisode:
    """One refinement episode of one exported row (the row's suite, backend database and ``<ask>``
    offer apply, :func:`~progress_sql.export.formats.row_env_config`). Not thread-safe: one per
    concurrent episode; they share the process's pool and gold store. Episodes started and stepped
    on many threads at once share batches to the workers (``coalesce``, env/coalesce.py); without
    it each reset and step makes its own round trip."""

    def __init__(
        self, settings: HostSettings, example: Example, row: Mapping[str, Any] | None = None, *, coalesce: bool = True
    ) -> None:
        self.settings = settings
        self.coalesce = coalesce
        self.config = row_env_config(settings.config, row or {})
        self.example = example
        self.env = hosted_env(settings, self.config)
        self.gold_error = ""
        # A database missing on this node is recorded, not raised: frameworks such as SkyRL's agent loop
        # have no except around their environment calls, so one raise would end the whole step.
        self.database_error = "" if Path(example.db_path).is_file() else missing_database(example.db_path)
        self.asks = 0
        self._reward_so_far = 0.0
        self._last: TurnRecord | None = None

    @property
    def max_turns(self) -> int:
        return self.config.max_turns

    @property
    def unscored(self) -> bool:
        """The episode cannot be scored: its gold failed or its database is missing here."""
        return bool(self.gold_error or self.database_error)

    def start(self) -> list[Message]:
        """Prepare the gold and return the opening messages (empty when the episode is unscored: a gold
        that fails or times out, or a database this node cannot open)."""
        self.asks = 0
        self._reward_so_far = 0.0
        self._last = None
        self.gold_error = ""
        if self.database_error:
            return []
        try:
            if self.coalesce:
                return reset_coalesced(self.env, self.example)
            return self.env.reset(self.example)
        except GoldQueryError as error:  # one bad row must not end a long training run
            self.gold_error = str(error)
        except DatasetError as error:  # nor one node without (or with a broken) database
            self.database_error = str(error)
        return []

    def marks(self) -> dict[str, str]:
        """Why the episode is unscored (empty strings when it is not); verl's names without its prefix
        (integrations/verl/reward.py GOLD_ERROR_KEY, DATABASE_ERROR_KEY)."""
        return {"gold_error": self.gold_error, "database_error": self.database_error}

    def step(self, action: str) -> HostedStep:
        """Score one model turn. An unscored episode ends at its first step with reward 0, the reason in
        the metadata (``stop``: gold_invalid or database_error, as verl's agent loop names it)."""
        if self.unscored:
            stop = "gold_invalid" if self.gold_error else "database_error"
            return HostedStep(None, 0.0, True, {**self.marks(), "stop": stop})
        result = step_coalesced(self.env, action) if self.coalesce else self.env.step(action)
        self._last = result.info
        self.asks += result.info.action == "ask"
        done = result.terminated or result.truncated
        if self.settings.step_rewards:
            # the environment's own scoring of the episode so far (answers plus the task terms of
            # clarifying questions and write checks), so the step rewards add up to the episode's
            total = result.reward if done else float(self.env.episode_reward().total)
            reward, self._reward_so_far = total - self._reward_so_far, total
        else:
            reward = result.reward
        return HostedStep(result.observation, float(reward), done, result.info.to_dict())

    @property
    def last(self) -> TurnRecord | None:
        """The record of the last scored turn."""
        return self._last

    def metrics(self) -> dict[str, Any]:
        """The episode's summary: answers (a clarifying question is counted in ``asks``), whether the last
        answer matched, k* (0 when none matched) and the episode's reward."""
        trajectory = self.env.trajectory
        last = self._last
        return {
            "turns": len(trajectory.turns),
            "asks": self.asks,
            "match": bool(last is not None and last.match),
            "k_star": trajectory.k_star or 0,
            "reward": last.reward.total if last is not None and last.reward is not None else 0.0,
        }


# ---- what a framework serves: exported rows and the episodes' settings ----------------------------


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a ``progress-sql export`` file (``.jsonl`` or ``.parquet``), in file order; a missing
    file, another suffix or a line that is not a JSON object is a one-line error naming the place."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"rows: no file {file} (write one with progress-sql export)")
    if file.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ConfigError(f"reading {file} needs pyarrow: pip install 'progress-sql[export]'") from None
        return [dict(row) for row in pq.read_table(file).to_pylist()]
    if file.suffix not in (".jsonl", ".json"):
        raise ConfigError(f"rows: {file} is neither .jsonl nor .parquet")
    return [dict(row) for row in read_json_lines(file, "rows", objects=True)]


def read_settings_file(path: str | Path, *, what: str = "settings") -> dict[str, Any]:
    """The settings in a ``.json``, ``.yaml`` or ``.yml`` file (one mapping); ``what`` names the option
    or key in the errors."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{what}: no file {file}")
    text = file.read_text(encoding="utf-8")
    if file.suffix in (".yaml", ".yml"):
        import yaml  # type: ignore[import-untyped, unused-ignore]  # every framework here brings pyyaml

        loaded = yaml.safe_load(text)
    elif file.suffix == ".json":
        loaded = parse(text, str(file))
    else:
        raise ConfigError(f"{what}: {file} is neither .json nor .yaml/.yml")
    if not isinstance(loaded, Mapping):
        raise ConfigError(f"{what}: {file} holds {type(loaded).__name__}, not a mapping of settings")
    return dict(loaded)


def read_settings(value: str | Path | None, *, what: str = "settings") -> dict[str, Any]:
    """Settings from a ``.json``/``.yaml``/``.yml`` file named by ``value``, or ``value`` itself as a
    JSON object; none when empty.

    >>> read_settings('{"timeout_s": 2}'), read_settings(None)
    ({'timeout_s': 2}, {})
    """
    if value is None or not str(value).strip():
        return {}
    if Path(value).suffix in (".json", ".yaml", ".yml"):
        return read_settings_file(value, what=what)
    try:
        loaded = parse(str(value), "its text")
    except DatasetError as error:
        raise ConfigError(f"{what}: neither a .json/.yaml file nor a JSON object ({error})") from None
    if not isinstance(loaded, Mapping):
        raise ConfigError(f"{what} hold {type(loaded).__name__}, not a mapping of settings")
    return dict(loaded)


@dataclass(frozen=True, slots=True)
class ExportedRow:
    """One exported row and the example its format's reader made of it: what a framework plays."""

    example: Example
    fields: Mapping[str, Any]

    @property
    def prompt(self) -> list[Message]:
        """The opening messages as exported (empty when the row has none)."""
        messages = self.fields.get("prompt")
        if not isinstance(messages, list):
            return []
        return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def read_rows(rows: Sequence[Mapping[str, Any]], row_format: str, *, where: str) -> tuple[ExportedRow, ...]:
    """Each row with its example, read by ``row_format``'s reader (an export format's name); an error
    names the row's number, and a file of no rows is an error."""
    reader = get_format(row_format).example
    read = []
    for number, fields in enumerate(rows, start=1):
        try:
            read.append(ExportedRow(reader(fields), fields))
        except DatasetError as error:
            raise DatasetError(f"{where}, row {number}: {error} (is it a {row_format} row?)") from None
    if not read:
        raise DatasetError(f"{where} holds no rows")
    return tuple(read)


def read_export(path: str | Path, row_format: str) -> tuple[ExportedRow, ...]:
    """The rows of an export file, each with its example (:func:`load_rows`, :func:`read_rows`)."""
    return read_rows(load_rows(path), row_format, where=str(path))
