"""Planning the shards of a cluster run: items grouped by database file, so that each database is opened
on one node (the node that runs its shard), and consecutive databases packed together, so that results
come back roughly in input order. Pure functions; no Ray.

>>> plan_shards(["a", "a", "b", "c", "b", "d"], shard_items=4)
(Shard(index=0, positions=(0, 1, 2, 4), databases=('a', 'b')), Shard(index=1, positions=(3, 5), databases=('c', 'd')))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, Protocol, TypeVar

from progress_sql.errors import ConfigError
from progress_sql.types import Example

T = TypeVar("T")
R = TypeVar("R")

#: Shards per CPU of the cluster when the shard size is left to the planner: a few per CPU, so that a
#: slow shard or a lost node costs a fraction of a CPU's share, while per-shard overhead (a task, its
#: pool) stays small.
SHARDS_PER_CPU = 4


@dataclass(frozen=True, slots=True)
class Shard:
    """One unit of cluster work: the positions (in the input) of every item on its databases."""

    index: int
    positions: tuple[int, ...]
    databases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShardOutput(Generic[R]):
    """What a shard function may return instead of a plain list: one result per item, in the shard's
    order, and counters the cluster run adds up over every shard (gold-cache hits, say)."""

    results: tuple[R, ...]
    counts: Mapping[str, int] = field(default_factory=dict)


def plan_shards(databases: Sequence[str], *, shard_items: int) -> tuple[Shard, ...]:
    """Group positions by database (in order of first appearance) and pack consecutive databases into
    shards of about ``shard_items`` items; a database is never split, so a database with more items
    than that is a shard of its own."""
    if shard_items < 1:
        raise ConfigError(f"shard_items must be >= 1, got {shard_items}")
    groups: dict[str, list[int]] = {}
    for position, database in enumerate(databases):
        groups.setdefault(database, []).append(position)
    shards: list[Shard] = []
    positions: list[int] = []
    names: list[str] = []

    def close() -> None:
        shards.append(Shard(len(shards), tuple(sorted(positions)), tuple(names)))
        positions.clear()
        names.clear()

    for database, members in groups.items():
        if positions and len(positions) + len(members) > shard_items:
            close()
        positions.extend(members)
        names.append(database)
    if positions:
        close()
    return tuple(shards)


def shard_size(items: int, cpus: int, per_cpu: int = SHARDS_PER_CPU) -> int:
    """Items per shard for ``items`` over ``cpus`` CPUs: about ``per_cpu`` shards per CPU.

    >>> shard_size(1000, 2)
    125
    >>> shard_size(3, 8)
    1
    """
    return max(1, -(-items // max(1, cpus * per_cpu)))


class OrderedMerge(Generic[R]):
    """Shard results in, item results out in input order: :meth:`add` takes a finished shard (once:
    a shard that comes back twice, say from a retry racing its first run, is ignored) and returns the
    ``(position, result)`` pairs that became ready, i.e. every position up to the first one still
    missing.

    >>> merge = OrderedMerge(plan_shards(["a", "b", "a"], shard_items=1))
    >>> merge.add(1, ["b1"])
    []
    >>> merge.add(0, ["a0", "a2"])
    [(0, 'a0'), (1, 'b1'), (2, 'a2')]
    >>> merge.add(0, ["again", "again"]), merge.complete
    ([], True)
    """

    def __init__(self, shards: Sequence[Shard]) -> None:
        self._shards = {s.index: s for s in shards}
        self._total = sum(len(s.positions) for s in shards)
        self._ready: dict[int, R] = {}
        self._finished: set[int] = set()
        self._next = 0

    @property
    def complete(self) -> bool:
        return self._next == self._total

    def finished(self, shard: int) -> bool:
        return shard in self._finished

    def add(self, shard: int, results: Sequence[R]) -> list[tuple[int, R]]:
        if shard in self._finished:
            return []
        positions = self._shards[shard].positions
        if len(results) != len(positions):
            raise ValueError(f"shard {shard} returned {len(results)} results for {len(positions)} items")
        self._finished.add(shard)
        self._ready.update(zip(positions, results, strict=True))
        out: list[tuple[int, R]] = []
        while self._next in self._ready:
            out.append((self._next, self._ready.pop(self._next)))
            self._next += 1
        return out


@dataclass(frozen=True, slots=True)
class ClusterRun(Generic[R]):
    """A finished cluster run: one result per item in input order, the shards' counters added up, how
    many shards there were, how many shard runs were lost and run again, and the nodes that ran them."""

    results: tuple[R, ...]
    counts: Mapping[str, int]
    shards: int
    retried: int
    nodes: tuple[str, ...]


class ShardRunner(Protocol):
    """What the commands' cores take as their ``cluster`` hook (:class:`progress_sql.cluster.ray_runner.
    RayCluster` implements it): run ``fn`` over ``items`` sharded by ``db_path(item)``.

    ``relocate(item, path)`` gives the item whose database is at ``path`` instead (for databases shipped
    through the object store: the node's copy); ``restore(result, item)`` undoes what that changed in a
    result. ``progress(n)`` hears every finished shard's item count (cluster-wide progress).

    ``fn`` gets a shard's items (each database's items together, in input order) and returns one result
    per item in the same order, or a :class:`ShardOutput`; it must be picklable (a module-level function
    or a ``functools.partial`` of one): it runs in another process, on another node."""

    def map(
        self,
        fn: Callable[[list[T]], Sequence[R] | ShardOutput[R]],
        items: Sequence[T],
        *,
        db_path: Callable[[T], str],
        relocate: Callable[[T, str], T] | None = None,
        restore: Callable[[R, T], R] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ClusterRun[R]: ...

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
        """``(position, result)`` in input order, each as soon as every earlier one is in."""
        ...


def example_db_path(example: Example) -> str:
    """Where an example's database is: what runs over examples shard by."""
    return example.db_path


def relocate_example(example: Example, db_path: str) -> Example:
    """The example with its database at ``db_path`` (a node's copy of a shipped database)."""
    return replace(example, db_path=db_path)
