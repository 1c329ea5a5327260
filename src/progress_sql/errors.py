"""Exceptions raised by progress-sql: only *our* problems and the user's bad input raise; model mistakes
(unparsable SQL, timeouts, wrong format) are data, returned as values, never raised."""

from __future__ import annotations


class ProgressSQLError(Exception):
    """Base class of every exception this package raises on purpose."""


class ConfigError(ProgressSQLError, ValueError):
    """A configuration value is invalid (the message names the field and the allowed range)."""


class DatasetError(ProgressSQLError, ValueError):
    """A dataset or schema file is missing or malformed (the message names the file)."""


class GoldQueryError(ProgressSQLError):
    """An example's gold query fails, times out or is too large: the example cannot be used."""


class WorkerStartError(ProgressSQLError, RuntimeError):
    """An execution worker process cannot start: the machine's problem, never charged to a query."""


class ClusterError(ProgressSQLError, RuntimeError):
    """A cluster run cannot go on: Ray is absent or unreachable, or a shard was lost more times than
    it may be retried (the message says which and why)."""


class GenerationError(ProgressSQLError, RuntimeError):
    """A generation backend failed (network, server, model): the run ends with its message."""
