"""Concurrent steps of different episodes played as one batch: the request-driven adapters (SkyRL's
stepping threads, OpenEnv's sessions, NeMo Gym's, verifiers' and Atropos's threads, verl's agent loop)
receive one turn per call, from many threads at once. Each caller reads its own turn
(:meth:`SQLRefineEnv.plan`) on its own thread; a turn that runs SQL then goes through a group commit:
the first caller leads a batch at once (no timer, so a lone call waits for nobody), the callers that
arrive while the pool's lanes are busy queue, and the next free lane takes them all (up to
``max_batch``) to the workers as one :func:`run_turns` batch and plays each turn with its result
(:meth:`SQLRefineEnv.take`; the caller is blocked meanwhile, so its episode is touched by one thread
at a time) as soon as that turn's own result is in, and wakes its caller then. The batch's threads
doing its Python work cost less than waking every caller at once to contend for the interpreter
lock. The gold preparations of new episodes (:func:`prepare_golds`) coalesce the same way.

A coalescer has as many lanes (batches in flight) as its pool has workers: while a worker is free a
call goes straight to it, and only the calls that would have waited for a worker wait in the queue
instead and then share one batch. A query that runs to its deadline delays no other episode: its
batch-mates are played and answered as their own results come in (``run_turns``' ``on_ready``). An
exception of one episode (a finished episode, a bad plan) is raised in its own caller's thread before
it queues, one in playing its turn is handed to its caller only, and when a whole batch fails each of
its turns runs alone, so every caller gets its own outcome.

docs/environment.md#concurrent-steps-coalesce."""

from __future__ import annotations

import contextlib
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

from progress_sql.env.core import PlannedTurn, SQLRefineEnv, StepResult, diagnose_ahead, prepare_golds, run_turns
from progress_sql.execution.pool import ExecutionPool
from progress_sql.prompts import Message
from progress_sql.types import Example, ExecResult

__all__ = [
    "DEFAULT_MAX_BATCH",
    "BatchFailedError",
    "Coalescer",
    "CoalescerCounts",
    "GroupCommit",
    "coalescer_of",
    "reset_coalesced",
    "step_coalesced",
]

#: The most turns one batch carries: MAX_CHUNK (16) jobs for each of 4 workers' chunks. Bounded so
#: one leader does not gather forever (and a chunk queued behind a slow query on its worker stays short).
DEFAULT_MAX_BATCH = 64

Item = TypeVar("Item")
Outcome = TypeVar("Outcome")
#: Hands one caller of a batch its outcome: (position in the batch, outcome).
Settle = Callable[[int, Outcome], None]


class BatchFailedError(Exception):
    """The batch a call rode in failed as a whole (a closed pool, a worker that did not start): the
    caller does its own work alone, which gives it its own outcome."""


@dataclass(frozen=True, slots=True)
class CoalescerCounts:
    """What a group commit did: ``batches`` run, ``items`` in them, and ``waits``: times a caller
    waited for a busy lane or for its batch (0 for calls that never overlapped)."""

    batches: int
    items: int
    waits: int


class _Ticket(Generic[Item, Outcome]):
    """One call's place in the queue: its item, what came back, and the event its caller waits on
    (set once: when its batch is settled, or when a finishing leader hands it a lane)."""

    __slots__ = ("done", "error", "item", "outcome", "woken")

    def __init__(self, item: Item) -> None:
        self.item = item
        self.done = False
        self.outcome: Outcome | None = None
        self.error: BaseException | None = None
        self.woken = threading.Event()


class GroupCommit(Generic[Item, Outcome]):
    """Leader/follower batching of ``run_batch`` (items -> outcomes, in order) over ``lanes`` batches
    in flight at most. Thread-safe; callers on threads of an asyncio loop's executor work alike. Each
    waiting caller is woken once, by its own event: a finishing leader settles its batch's callers
    and hands its lane to the oldest queued one, who leads the next batch."""

    def __init__(
        self,
        run_batch: Callable[..., Sequence[Outcome]],
        *,
        lanes: int,
        max_batch: int,
        early: bool = False,
    ) -> None:
        """With ``early`` the batch is run as ``run_batch(items, settle)``: ``settle(position, outcome)``
        (from any thread, once per position, before ``run_batch`` returns) hands that caller its outcome
        at once, so a batch-mate's slow query holds it up no longer; the positions never settled get
        their outcomes from the return."""
        if lanes < 1 or max_batch < 1:
            raise ValueError(f"lanes and max_batch must be >= 1, got {lanes} and {max_batch}")
        self._run_batch = run_batch
        self._early = early
        self.lanes, self.max_batch = lanes, max_batch
        self._lock = threading.Lock()
        # A batch of several that settles early runs on one of these (at most one a lane), kept between
        # batches: a thread started per batch costs several times a hand-off to a waiting one.
        self._settlers = ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="progress-sql-settle")
        self._queue: deque[_Ticket[Item, Outcome]] = deque()
        self._leading = 0
        self._batches = self._items = self._waits = 0

    def counts(self) -> CoalescerCounts:
        with self._lock:
            return CoalescerCounts(self._batches, self._items, self._waits)

    def queued(self) -> int:
        """Calls waiting for a lane now (not yet in a batch)."""
        with self._lock:
            return len(self._queue)

    def submit(self, item: Item) -> Outcome:
        """``item``'s outcome from the batch it was played in. Raises the batch's error when the batch
        held this item alone, :class:`BatchFailedError` when it held others too."""
        ticket: _Ticket[Item, Outcome] = _Ticket(item)
        with self._lock:
            leads = self._leading < self.lanes
            if leads:
                self._leading += 1
            else:
                self._queue.append(ticket)
                self._waits += 1
        if not leads:
            ticket.woken.wait()  # settled in another's batch, or handed a lane
        if not ticket.done:
            self._lead(ticket)
        if ticket.error is not None:
            raise ticket.error
        return ticket.outcome  # type: ignore[return-value]  # set with done, error unset

    def _lead(self, ticket: _Ticket[Item, Outcome]) -> None:
        """Play ``ticket`` and the oldest queued calls as one batch, settle them, pass the lane on. A
        batch of several that settles early runs on a settling thread (kept between batches) while the
        leader waits for its own outcome like the others: a batch-mate's slow query holds up the leader
        no more than them."""
        with self._lock:
            batch = [ticket, *(self._queue.popleft() for _ in range(min(len(self._queue), self.max_batch - 1)))]
        if len(batch) == 1 or not self._early:
            self._settle(batch, wake_leader=False)
            return
        ticket.woken.clear()  # a successor was woken to lead: its event now waits for its own outcome
        self._settlers.submit(self._settle, batch, True)
        ticket.woken.wait()

    def _settle(self, batch: list[_Ticket[Item, Outcome]], wake_leader: bool) -> None:
        """Run ``batch``, hand each caller its outcome (as it comes, with ``early``), pass the lane on."""
        outcomes: Sequence[Outcome] = ()
        failure: BaseException | None = None
        settling = threading.Lock()
        early: set[int] = set()

        def settle(position: int, outcome: Outcome) -> None:
            taken = batch[position]
            with settling:
                if position in early:
                    return
                early.add(position)
                taken.outcome, taken.done = outcome, True
            if position > 0 or wake_leader:  # else the leader's own call returns when the batch does
                taken.woken.set()

        items = [taken.item for taken in batch]
        try:
            outcomes = self._run_batch(items, settle) if self._early else self._run_batch(items)
        except BaseException as error:  # settled below for every caller of the batch, then re-raised
            failure = error
        with settling:
            settled_early = set(early)
            early.update(range(len(batch)))  # a late settle call changes nothing now
        for position, taken in enumerate(batch):
            if position in settled_early:
                continue
            if failure is None:
                taken.outcome = outcomes[position]
            elif len(batch) == 1 or not isinstance(failure, Exception):
                taken.error = failure  # its own error, or an interruption every caller must see
            else:
                taken.error = BatchFailedError(f"a batch of {len(batch)} failed: {failure}")
            taken.done = True
        with self._lock:
            self._batches += 1
            self._items += len(batch)
            successor = self._queue.popleft() if self._queue else None
            if successor is None:
                self._leading -= 1
        for position, taken in enumerate(batch):
            if position not in settled_early and (position > 0 or wake_leader):
                taken.woken.set()
        if successor is not None:
            successor.woken.set()  # the lane stays taken: the successor leads the next batch


#: The threads that play batches' turns as their results come in (one a batch in flight; more batches
#: than this at once wait for a player, and their callers get their turns when one is free).
_PLAYERS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="progress-sql-player")


def _played(
    turns: Sequence[tuple[SQLRefineEnv, PlannedTurn]], settle: Settle[StepResult | Exception]
) -> list[StepResult | Exception]:
    """Each turn of the batch played with its result as soon as that result is in, and its caller
    settled then: a batch-mate's query that runs to its deadline holds up no other turn. One player
    thread plays them in turn (rather than every caller woken to contend for the interpreter lock), and
    never a pool thread: playing can run queries of its own (a suite's), which need a worker that the
    pool's thread still holds. An episode's own exception is kept for its caller."""
    played: list[StepResult | Exception | None] = [None] * len(turns)
    arrived: queue.SimpleQueue[tuple[int, ExecResult] | None] = queue.SimpleQueue()

    def play(position: int, result: ExecResult | None) -> StepResult | Exception:
        env, turn = turns[position]
        try:
            return env.take(turn, result)
        except Exception as error:  # raised in its own caller's thread by Coalescer.step
            return error

    def player() -> None:
        while (item := arrived.get()) is not None:
            position, result = item
            played[position] = outcome = play(position, result)
            settle(position, outcome)

    if len(turns) == 1:  # nobody to hold up: diagnosed while its SQL runs, played here when its result is in
        return [play(0, run_turns(turns, meanwhile=lambda: diagnose_ahead(turns))[0])]
    playing = _PLAYERS.submit(player)
    try:
        results = run_turns(turns, on_ready=lambda position, result: arrived.put((position, result)))
    finally:
        arrived.put(None)
        playing.result()
    return [
        outcome if outcome is not None else play(position, results[position]) for position, outcome in enumerate(played)
    ]


def _prepared(episodes: Sequence[tuple[SQLRefineEnv, Example]]) -> list[None]:
    prepare_golds(episodes)
    return [None] * len(episodes)


class Coalescer:
    """The group commits of one execution pool: turns (``step``) and new episodes' golds (``reset``),
    each with as many lanes as the pool has workers."""

    def __init__(self, lanes: int, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        self.turns: GroupCommit[tuple[SQLRefineEnv, PlannedTurn], StepResult | Exception] = GroupCommit(
            _played, lanes=lanes, max_batch=max_batch, early=True
        )
        self.golds: GroupCommit[tuple[SQLRefineEnv, Example], None] = GroupCommit(
            _prepared, lanes=lanes, max_batch=max_batch
        )

    def step(self, env: SQLRefineEnv, response: str) -> StepResult:
        """``env.step(response)``, its SQL run and its turn played in a batch with the turns of other
        episodes stepped meanwhile; the same result as the lone step. A turn that runs nothing does
        not queue."""
        turn = env.plan(response)  # this episode's own errors (over, not reset) raise here
        if turn.sql is None:
            return env.take(turn)
        try:
            played = self.turns.submit((env, turn))
        except BatchFailedError:
            return env.take(turn)  # the turn's SQL runs alone
        if isinstance(played, Exception):
            raise played
        return played

    def reset(self, env: SQLRefineEnv, example: Example) -> list[Message]:
        """``env.reset(example)``, the gold prepared in a batch with the other episodes reset meanwhile
        (a gold that fails raises :class:`~progress_sql.errors.GoldQueryError` here, as alone)."""
        with contextlib.suppress(BatchFailedError):  # then the reset prepares its own gold
            self.golds.submit((env, example))
        return env.reset(example)


_coalescers: weakref.WeakKeyDictionary[ExecutionPool, Coalescer] = weakref.WeakKeyDictionary()
_coalescers_lock = threading.Lock()


def coalescer_of(pool: ExecutionPool) -> Coalescer:
    """The process's coalescer of ``pool`` (made on first use, dropped with the pool)."""
    with _coalescers_lock:
        coalescer = _coalescers.get(pool)
        if coalescer is None:
            coalescer = _coalescers[pool] = Coalescer(lanes=pool.size)
        return coalescer


def step_coalesced(env: SQLRefineEnv, response: str) -> StepResult:
    """``env.step(response)`` through the coalescer of the environment's pool."""
    return coalescer_of(env.store.pool).step(env, response)


def reset_coalesced(env: SQLRefineEnv, example: Example) -> list[Message]:
    """``env.reset(example)`` through the coalescer of the environment's pool."""
    return coalescer_of(env.store.pool).reset(env, example)
