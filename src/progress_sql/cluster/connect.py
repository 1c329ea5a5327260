"""A command's Ray cluster as a context: joined for the run when ``--ray ADDRESS`` is given, left
when the block ends; absent, Ray is never imported."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from progress_sql.errors import ConfigError

if TYPE_CHECKING:  # the cluster's runner imports Ray: only a --ray run loads it
    from progress_sql.cluster.ray_runner import RayCluster

#: How database files reach the nodes (``--ray-databases``).
RAY_DATABASES = ("shared", "object-store")


@contextmanager
def joined_cluster(address: str | None, databases: str, workers: int) -> Iterator[RayCluster | None]:
    """The Ray cluster at ``address`` (None without one), left when the block ends; ``workers`` is
    ``--workers`` as given: processes per shard, each shard reserving as many CPUs (0: one). A bad
    ``databases`` raises :class:`ConfigError`, an unreachable cluster :class:`ClusterError`."""
    if address is None:
        yield None
        return
    if databases not in RAY_DATABASES:
        raise ConfigError(f"--ray-databases must be one of {', '.join(RAY_DATABASES)}, got {databases!r}")
    from progress_sql.cluster.ray_runner import ClusterOptions, RayCluster

    cluster = RayCluster(ClusterOptions(address, databases, max(1, workers)))  # type: ignore[arg-type]
    try:
        yield cluster
    finally:
        cluster.close()


def shard_workers(workers: int, ray: str | None, cores: int) -> int:
    """``--workers`` as a process count: per shard with ``--ray`` (0: one), else 0 is one per core
    (``cores``); negative values raise :class:`ConfigError`."""
    if workers < 0:
        meaning = "" if ray is not None else " (0: one per core)"
        raise ConfigError(f"--workers must be >= 0{meaning}, got {workers}")
    return (workers or cores) if ray is None else max(1, workers)
