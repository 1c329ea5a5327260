"""Child processes that end with the process that started them, however it ends (SIGKILL included):
docs/cli.md#interrupts.

The owner (the process that makes a pool) holds the only write end of a pipe, its *lifeline*; every
child it starts receives the read end and a thread that waits on it. Nothing is ever written: the
read returns (end of file) only when the owner has ended, and the child then ends at once. This is the
portable form of Linux's ``PR_SET_PDEATHSIG``, and it reaches children whose parent is not the owner:
workers are forked from the fork server, not from the process that uses them.

Once the children are gone, the fork server and multiprocessing's resource tracker end too: each exits
when the last holder of its pipe (the owner and the children it started) has ended. So nothing is left
that holds the caller's stdout or stderr open.

The same pipe stops the children on an interrupt (:func:`interrupt`, which the CLI calls for SIGINT,
SIGTERM and SIGHUP): the owner closes its write end, every child ends at once, and the owner's pools
stop their batches (:class:`Interrupted`) instead of waiting for them or redoing their work in the
owner. Children ignore SIGINT: a Ctrl-C reaches the whole process group, and the owner decides.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, NoReturn

#: The exit code of a child whose owner has ended (nobody reads it: the owner is gone).
OWNER_GONE_EXIT = 70

_lock = threading.Lock()
#: This process's lifeline: (the pid that made it, the read end handed to children, the write end).
_line: list[tuple[int, Connection, int]] = []
#: (this process's pid, the signal) once :func:`interrupt` ended its children (a fork is not interrupted).
_interrupted: list[tuple[int, int]] = []


class Interrupted(KeyboardInterrupt):
    """The process is being interrupted by signal ``signum``: raised where its main thread is (as
    Python raises KeyboardInterrupt for SIGINT), and by pool work that the interrupt stopped."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupt(signum: int) -> NoReturn:
    """End every child of this process now and raise :class:`Interrupted` (for a signal handler: it
    takes no lock, and closing a descriptor is safe there). From then on the pools' batches stop
    (:func:`interruption`), and a child started anyway ends at once (its lifeline is already closed)."""
    if interruption() is None:
        _interrupted[:] = [(os.getpid(), signum)]
        if _line and _line[0][0] == os.getpid():
            os.close(_line[0][2])  # the children's watches return: each ends at once
    raise Interrupted(signum)


def interruption() -> Interrupted | None:
    """Once :func:`interrupt` ran in this process, the exception to stop work with (work meant for the
    children is neither started again nor done in their place); None before."""
    if _interrupted and _interrupted[0][0] == os.getpid():
        return Interrupted(_interrupted[0][1])
    return None


def lifeline() -> Connection:
    """The read end of this process's lifeline, to hand to a child it starts (as an argument of the
    child's process object: multiprocessing passes the descriptor along, under ``forkserver`` and
    ``spawn`` alike). Made once per process; a process forked from this one makes its own."""
    with _lock:
        if not _line or _line[0][0] != os.getpid():
            # os.pipe's ends are not inheritable: no program this process runs, and neither the fork
            # server nor the resource tracker (started with chosen descriptors only), holds the write end.
            read_end, write_end = os.pipe()
            _line[:] = [(os.getpid(), Connection(read_end, writable=False), write_end)]
        return _line[0][1]


def watch_owner(line: Connection) -> None:
    """In a child: end this process (``os._exit``) as soon as the owner that gave ``line`` has ended,
    and leave SIGINT to the owner. Returns at once; the wait runs in a daemon thread."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_end_with_owner, args=(line.fileno(),), name="progress-sql-lifeline", daemon=True).start()


def _end_with_owner(descriptor: int) -> None:
    try:
        while os.read(descriptor, 1):  # nothing is written: only the end of file returns
            pass
    except OSError:  # the descriptor is gone: the owner cannot be watched, so it is not waited for
        pass
    os._exit(OWNER_GONE_EXIT)  # no cleanup: the owner, whose work this was, is gone


def _start_watched_child(line: Connection, initializer: Callable[[], object] | None) -> None:
    watch_owner(line)
    if initializer is not None:
        initializer()


class BoundProcessPool(ProcessPoolExecutor):
    """A :class:`~concurrent.futures.ProcessPoolExecutor` whose processes end with this one: each
    watches the lifeline (:func:`watch_owner`) before ``initializer`` runs. Leaving its ``with``
    block by an interrupt (KeyboardInterrupt, which the CLI raises for SIGTERM too) kills the processes
    instead of waiting for the tasks they are running."""

    def __init__(self, max_workers: int, mp_context: Any, initializer: Callable[[], object] | None = None) -> None:
        super().__init__(
            max_workers, mp_context=mp_context, initializer=_start_watched_child, initargs=(lifeline(), initializer)
        )

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> bool | None:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            abort_pool_processes(self)
        return super().__exit__(exc_type, exc, traceback)


def abort_pool_processes(pool: ProcessPoolExecutor) -> None:
    """Cancel the pool's queued tasks and kill its processes now; the pool is shut down and waited for
    (once its processes are dead, that is at once)."""
    # ``_processes`` is the executor's own map of live processes; Python 3.14 adds terminate_workers().
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.kill()
    for process in processes:
        process.join(timeout=2.0)
    pool.shutdown(wait=True)
