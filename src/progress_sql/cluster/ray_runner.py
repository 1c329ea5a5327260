"""Runs shard functions on a Ray cluster: the one module that imports Ray (docs/scaling.md).

Each shard is one Ray task that reserves ``cpus_per_shard`` CPUs and calls the shard function, which
runs the same code as a one-machine run (the audit's checks, the gold store over the isolated
execution pool, the suite builder). At most a window of shards is in flight; finished shards are
merged back in input order (:class:`~progress_sql.cluster.shards.OrderedMerge`). A shard whose run is
lost (its node or worker process died, its result object was lost) is submitted again, up to
``attempts`` runs, and only its first finished run counts: no record is lost or written twice. Errors
raised by the shard function itself are the run's errors and are not retried.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from progress_sql.cluster.shards import (
    ClusterRun,
    OrderedMerge,
    ShardOutput,
    plan_shards,
    shard_size,
)
from progress_sql.errors import ClusterError, ConfigError, ProgressSQLError
from progress_sql.execution.digest import file_digest
from progress_sql.types import Closing

try:
    import ray  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # RayCluster says how to get it
    ray = None

#: What a cluster run without Ray says.
NO_RAY = "--ray needs Ray: install the [ray] extra (pip install -c constraints.txt -e '.[ray]')"

T = TypeVar("T")
R = TypeVar("R")

DatabaseTransport = Literal["shared", "object-store"]
#: How database files reach the nodes. ``shared``: every node reads the path the driver reads (a network
#: filesystem or object-store bucket mounted at the same path). ``object-store``: the driver puts each
#: database's bytes in Ray's object store and the node that runs its shard writes a local copy
#: (content-addressed, so every shard on a node reuses it): for small databases and nodes without the mount.
TRANSPORTS: tuple[DatabaseTransport, ...] = ("shared", "object-store")
#: Runs of a shard before the cluster run fails: a lost node's shards run again elsewhere.
DEFAULT_ATTEMPTS = 3
#: Where a node keeps the databases shipped through the object store.
SHIPPED_FOLDER = "progress-sql-shipped"
#: Environment variables of the driver that reach every shard's process (they decide how SQLite opens files).
FORWARDED_ENV = ("PROGRESS_SQL_SQLITE_IMMUTABLE",)


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """How to reach the cluster and how to cut the work.

    ``address``: ``auto`` (join the cluster running on this machine's network, as ``ray start`` left
    it), ``local`` (start Ray on this machine for the run) or a Ray address (``host:6379``,
    ``ray://host:10001``). ``shard_items`` None lets the planner choose (a few shards per CPU).
    """

    address: str
    databases: DatabaseTransport = "shared"
    cpus_per_shard: int = 1
    shard_items: int | None = None
    attempts: int = DEFAULT_ATTEMPTS

    def __post_init__(self) -> None:
        if not self.address:
            raise ConfigError("a Ray address is auto, local, or host:port / ray://host:port")
        if self.databases not in TRANSPORTS:
            raise ConfigError(f"database transport must be one of {', '.join(TRANSPORTS)}, got {self.databases!r}")
        if self.cpus_per_shard < 1:
            raise ConfigError(f"cpus_per_shard must be >= 1, got {self.cpus_per_shard}")
        if self.shard_items is not None and self.shard_items < 1:
            raise ConfigError(f"shard_items must be >= 1, got {self.shard_items}")
        if self.attempts < 1:
            raise ConfigError(f"attempts must be >= 1, got {self.attempts}")


class RayCluster(Closing):
    """A connection to a Ray cluster that runs shard functions (:class:`~progress_sql.cluster.shards.
    ShardRunner`). Joins the cluster when Ray is not connected yet (and leaves it on :meth:`close`);
    reuses the connection of a process that is."""

    def __init__(self, options: ClusterOptions) -> None:
        if ray is None:
            raise ClusterError(NO_RAY)
        self.options = options
        self._owns_connection = not ray.is_initialized()
        if self._owns_connection:
            address = None if options.address == "local" else options.address
            env = {name: os.environ[name] for name in FORWARDED_ENV if name in os.environ}
            try:
                ray.init(
                    address=address,
                    include_dashboard=False,
                    logging_level=logging.WARNING,
                    log_to_driver=False,
                    runtime_env={"env_vars": env} if env else None,
                )
            except ConnectionError as error:
                raise ClusterError(f"cannot reach a Ray cluster at {options.address}: {error}") from error

    @property
    def cpus(self) -> int:
        """CPUs of the whole cluster (as its nodes declared them)."""
        return int(ray.cluster_resources().get("CPU", 0))

    @property
    def nodes(self) -> int:
        """Nodes alive now."""
        return sum(1 for node in ray.nodes() if node.get("Alive"))

    def map(
        self,
        fn: Callable[[list[T]], Sequence[R] | ShardOutput[R]],
        items: Sequence[T],
        *,
        db_path: Callable[[T], str],
        relocate: Callable[[T, str], T] | None = None,
        restore: Callable[[R, T], R] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ClusterRun[R]:
        """Every item's result, in input order (see :meth:`stream`), with the run's counters."""
        run = _Run(self, fn, items, db_path, relocate, restore, progress)
        results = [result for _, result in run]
        return ClusterRun(tuple(results), dict(run.counts), len(run.shards), run.retried, tuple(sorted(run.nodes)))

    def stream(
        self,
        fn: Callable[[list[T]], Sequence[R] | ShardOutput[R]],
        items: Sequence[T],
        *,
        db_path: Callable[[T], str],
        relocate: Callable[[T, str], T] | None = None,
        restore: Callable[[R, T], R] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Iterator[tuple[int, R]]:
        """``(position, result)`` pairs in input order, each as soon as every earlier one is in."""
        return iter(_Run(self, fn, items, db_path, relocate, restore, progress))

    def close(self) -> None:
        """Leave the cluster if this object joined it (a cluster started with ``local`` stops)."""
        if self._owns_connection and ray.is_initialized():
            ray.shutdown()


class _Run(Iterator[tuple[int, R]]):
    """One sharded run: submits shards (a window at a time), resubmits lost ones, merges in order."""

    def __init__(
        self,
        cluster: RayCluster,
        fn: Callable[[list[T]], Sequence[R] | ShardOutput[R]],
        items: Sequence[T],
        db_path: Callable[[T], str],
        relocate: Callable[[T, str], T] | None,
        restore: Callable[[R, T], R] | None,
        progress: Callable[[int], None] | None,
    ) -> None:
        options = cluster.options
        paths = [db_path(item) for item in items]
        cpus = max(1, cluster.cpus // options.cpus_per_shard)
        size = options.shard_items or shard_size(len(items), cpus)
        self.shards = plan_shards(paths, shard_items=size)
        self.counts: dict[str, int] = {}
        self.retried = 0
        self.nodes: set[str] = set()
        self._merge: OrderedMerge[R] = OrderedMerge(self.shards)
        self._ready: deque[tuple[int, R]] = deque()
        self._items, self._db_path = items, db_path
        self._fn, self._relocate, self._restore = fn, relocate, restore
        self._progress = progress
        self._ship = options.databases == "object-store"
        self._shipped: dict[str, tuple[str, Any]] = {}  # path -> (content digest, object ref)
        self._task = ray.remote(_run_shard).options(num_cpus=options.cpus_per_shard, max_retries=0)
        self._attempts = options.attempts
        self._window = max(2, 2 * cpus)
        self._waiting: deque[tuple[int, int]] = deque((s.index, 1) for s in self.shards)  # (shard, attempt)
        self._running: dict[Any, tuple[int, int]] = {}  # object ref -> (shard, attempt)

    def __iter__(self) -> _Run[R]:
        return self

    def __next__(self) -> tuple[int, R]:
        while not self._ready:
            if self._merge.complete:
                raise StopIteration
            self._step()
        return self._ready.popleft()

    def _submit(self) -> None:
        while self._waiting and len(self._running) < self._window:
            index, attempt = self._waiting.popleft()
            shard = self.shards[index]
            batch = [self._items[p] for p in shard.positions]
            shipped = None
            if self._ship:
                shipped = {path: self._put(path) for path in shard.databases if Path(path).is_file()}
            ref = self._task.remote(self._fn, batch, self._db_path, shipped, self._relocate, self._restore)
            self._running[ref] = (index, attempt)

    def _put(self, path: str) -> tuple[str, Any]:
        if path not in self._shipped:
            self._shipped[path] = (file_digest(path), ray.put(Path(path).read_bytes()))
        return self._shipped[path]

    def _step(self) -> None:
        self._submit()
        done, _ = ray.wait(list(self._running), num_returns=1)
        for ref in done:
            index, attempt = self._running.pop(ref)
            try:
                node, results, counts = ray.get(ref)
            except ray.exceptions.RayTaskError as error:  # the shard function's own error: the run's error
                cause = getattr(error, "cause", None)
                if isinstance(cause, ProgressSQLError):
                    raise cause from None
                raise
            except ray.exceptions.RayError as error:  # the node, the worker or the result was lost
                if attempt >= self._attempts:
                    raise ClusterError(
                        f"shard {index} ({len(self.shards[index].positions)} items) was lost {attempt} times; "
                        f"last: {type(error).__name__}: {error}"
                    ) from error
                self.retried += 1
                self._waiting.appendleft((index, attempt + 1))
                continue
            if self._merge.finished(index):
                continue
            self.nodes.add(node)
            for key, value in counts.items():
                self.counts[key] = self.counts.get(key, 0) + value
            self._ready.extend(self._merge.add(index, results))
            if self._progress is not None:
                self._progress(len(results))
            for path in self.shards[index].databases:  # a database is in one shard only: done with it
                self._shipped.pop(path, None)


def _run_shard(
    fn: Callable[[list[Any]], Sequence[Any] | ShardOutput[Any]],
    items: list[Any],
    db_path: Callable[[Any], str],
    shipped: Mapping[str, tuple[str, Any]] | None,
    relocate: Callable[[Any, str], Any] | None,
    restore: Callable[[Any, Any], Any] | None,
) -> tuple[str, list[Any], dict[str, int]]:
    """A shard on its node: local copies of shipped databases, the shard function, its results."""
    node = str(ray.get_runtime_context().get_node_id())
    originals = items
    if shipped:
        if relocate is None:
            raise ConfigError("databases shipped through the object store need a relocate function")
        local = {path: _local_copy(path, digest, ref) for path, (digest, ref) in shipped.items()}
        items = [relocate(item, local[db_path(item)]) if db_path(item) in local else item for item in items]
    output = fn(items)
    if isinstance(output, ShardOutput):
        results, counts = list(output.results), dict(output.counts)
    else:
        results, counts = list(output), {}
    if shipped and restore is not None:
        results = [restore(result, item) for result, item in zip(results, originals, strict=True)]
    return node, results, counts


def _local_copy(path: str, digest: str, ref: Any) -> str:
    """This node's copy of a shipped database (written once per content, atomically; the file keeps
    its name, so that nothing that reads the name changes)."""
    target = Path(tempfile.gettempdir()) / SHIPPED_FOLDER / digest / Path(path).name
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.part")
        partial.write_bytes(ray.get(ref))
        partial.replace(target)
    return str(target)
