"""Parallel, isolated execution: long-lived worker processes, results in input order, a hung or dead
worker replaced without failing the batch, a query whose worker died rerun once. Threads, deadlines,
reruns and the ``spawn`` guard: docs/semantics.md#the-worker-pool. Workers end with the process that
started them, however it ends (execution/lifetime.py); an interrupt stops them at once.

Usage::

    with ExecutionPool(workers=2) as pool:
        results = pool.run_many([ExecJob("db.sqlite", "SELECT 1"), ...])
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import multiprocessing.forkserver
import os
import queue
import select
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

from progress_sql.errors import WorkerStartError
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.lifetime import interruption, lifeline, watch_owner
from progress_sql.execution.worker import READY, worker_main
from progress_sql.types import Closing, ExecResult

#: Address-space cap of each worker process.
DEFAULT_WORKER_MEMORY = 2 * 2**30
#: Seconds after a job's own deadline before the parent kills its worker.
DEFAULT_KILL_MARGIN_S = 2.0
#: Seconds a new worker may take to start and report ready (imports on a loaded machine are slow).
DEFAULT_START_TIMEOUT_S = 60.0
#: How worker processes start. A fork server (one process, started once per parent process) imports
#: the main script and the worker module once (:data:`FORKSERVER_PRELOAD`); each worker is then a fork
#: of it, ready in milliseconds. With ``spawn`` every worker is a fresh interpreter that re-imports
#: the main script (for the console script: the CLI) and the worker module. Either way the parent,
#: which runs threads, is never forked. ``spawn`` where fork servers do not exist.
DEFAULT_START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
#: What the fork server imports before it forks workers: the main script, as spawn would in each
#: worker (so the ``__main__`` guard still matters, see :data:`GUARD_HINT`), the worker's module and
#: what the ODT analysis processes (judge/analysis.py, forked from the same server) import.
FORKSERVER_PRELOAD = (
    "__main__",
    "progress_sql.execution.worker",
    "progress_sql.judge.analysis",
    "progress_sql.odt.diagnosis",
    "progress_sql.sql.hardness",
    "progress_sql.sql.normalize",
)
#: A worker that dies while running a query is replaced and the query rerun once: the first death may
#: be the machine's (a kill from outside, an OOM killer aiming elsewhere); a second is the query's own.
ATTEMPTS_PER_JOB = 2
GUARD_HINT = (
    "worker processes (or the fork server they start from) re-import the main script, so a script that "
    'uses the execution pool must run that code under `if __name__ == "__main__":`'
)


def start_worker_server() -> None:
    """Start the fork server that workers are forked from, if it is not running (it returns at once):
    its imports then overlap the caller's work until the first batch starts workers. A pool starts it
    when made; a command that will make one can start it earlier (the CLI does before importing the
    command's module). A no-op where workers are spawned."""
    if DEFAULT_START_METHOD == "forkserver":
        _ensure_fork_server()


def _ensure_fork_server() -> None:
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(FORKSERVER_PRELOAD))  # before it starts
    multiprocessing.forkserver.ensure_running()


#: A large batch reaches each worker in chunks of up to this many jobs, which the worker runs one after
#: another, answering each as it ends: it never waits for the parent between them (a round trip per
#: job cost more than a typical Spider query). Chunks shrink towards the batch's end (at least
#: :data:`CHUNKS_PER_WORKER` per worker of what is left) so the workers finish together; a small
#: batch goes one job at a time.
MAX_CHUNK = 16
CHUNKS_PER_WORKER = 4

OnStart = Callable[[int, int], None]  # (job index, worker pid)
OnResult = Callable[[int, ExecResult], None]


class _WorkerDiedError(Exception):
    """The worker process ended while running a job (the parent decides whether to rerun it)."""

    def __init__(self, exit_code: int | None) -> None:
        super().__init__(f"exit code {exit_code}")
        self.exit_code = exit_code


def _worker_process(owner: Connection, conn: Connection, memory_bytes: int | None) -> None:
    """A worker process: it ends when its owner ends (even mid-query), else serves ``conn``."""
    watch_owner(owner)
    worker_main(conn, memory_bytes)


#: poll() takes its wait in milliseconds as a C int: a longer one (the longest deadline and the kill margin) waits
#: without a limit.
_POLL_MS_MAX = 2**31 - 1


class _Readable:
    """Whether a descriptor has something to read (a message, an exit status, or its other end closed),
    waiting at most ``timeout_s``: one poll object per descriptor, registered once. multiprocessing's own
    checks (``Connection.poll``, and ``Process.is_alive`` under the fork server) build and register a
    selector on every call, which cost the parent about a tenth of a job's round trip."""

    def __init__(self, fd: int) -> None:
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)  # a hang-up or an error is reported whatever the mask

    def __call__(self, timeout_s: float) -> bool:
        wait_ms = max(0.0, timeout_s) * 1000
        return bool(self._poll.poll(None if wait_ms > _POLL_MS_MAX else math.ceil(wait_ms)))


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, context: Any, memory_bytes: int | None, start_timeout_s: float) -> None:
        self._context = context
        self._memory_bytes = memory_bytes
        self._start_timeout_s = start_timeout_s
        self._process: Any = None
        self._conn: Connection | None = None
        self._answered: _Readable | None = None  # the pipe has the worker's next message
        self._ended: _Readable | None = None  # the process has ended

    @property
    def pid(self) -> int | None:
        return None if self._process is None else int(self._process.pid)

    def _start(self) -> None:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_process,
            args=(lifeline(), child, self._memory_bytes),
            daemon=True,
            name="progress-sql-exec",
        )
        try:
            process.start()
        except OSError as error:  # no process slot or memory left on the machine
            parent.close()
            raise WorkerStartError(f"cannot start an execution worker: {error}") from error
        except EOFError as error:  # the fork server ended: it failed to import the main script
            parent.close()
            raise WorkerStartError(
                f"cannot start an execution worker: the fork server ended ({error}); the usual cause: {GUARD_HINT}"
            ) from error
        finally:
            child.close()
        answered = ready = False
        try:
            answered = parent.poll(self._start_timeout_s)
            ready = answered and parent.recv() == READY
        except (EOFError, OSError):  # the process ended before it was ready
            answered = True
        if ready:  # only a ready worker is visible (pid) and takes jobs
            self._process, self._conn = process, parent
            self._answered, self._ended = _Readable(parent.fileno()), _Readable(process.sentinel)
            return
        code = _exit_code(process) if answered else None
        parent.close()
        if code is None:
            process.kill()
            process.join(timeout=2.0)
            raise WorkerStartError(f"an execution worker was not ready after {self._start_timeout_s:g} s")
        if code < 0:
            raise WorkerStartError(f"an execution worker was killed by signal {-code} before it was ready")
        raise WorkerStartError(
            f"an execution worker exited (code {code}) before it was ready; the usual cause: {GUARD_HINT}"
        )

    def ensure_started(self) -> int:
        """Start the process if it is not running, trying twice; raises :class:`WorkerStartError`."""
        if self._ended is None or self._ended(0):  # None: no process (set and cleared with it)
            self.stop(kill=True)
            try:
                self._start()
            except WorkerStartError:
                self._start()  # a second failure is the machine's or the script's, not chance
        assert self._process is not None
        return int(self._process.pid)

    def send(self, jobs: Sequence[ExecJob]) -> None:
        """Send one job, or several that the worker runs in order and answers one by one."""
        assert self._conn is not None
        try:
            self._conn.send(jobs[0] if len(jobs) == 1 else tuple(jobs))
        except (EOFError, OSError):
            code = None if self._process is None else _exit_code(self._process)
            self.stop(kill=True)
            raise _WorkerDiedError(code) from None

    def receive(self, job: ExecJob, margin_s: float) -> ExecResult:
        """The result of ``job``, the next one the worker answers; past its deadline (counted from now,
        which is never before it started) the worker is killed and the result is a timeout."""
        assert self._conn is not None
        assert self._answered is not None
        start = time.perf_counter()
        try:
            if not self._answered(job.limits.timeout_s + margin_s):
                self.stop(kill=True)
                return ExecResult(
                    "timeout",
                    error=f"exceeded {job.limits.timeout_s:g} s; worker killed and replaced",
                    elapsed_s=time.perf_counter() - start,
                )
            result = self._conn.recv()
        except (EOFError, OSError):
            code = None if self._process is None else _exit_code(self._process)
            self.stop(kill=True)
            raise _WorkerDiedError(code) from None
        if not isinstance(result, ExecResult):  # never expected; keep the batch alive regardless
            return ExecResult("error", error=f"worker sent {type(result).__name__}", failed_outside=True)
        return result

    def stop(self, *, kill: bool = False) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = self._answered = self._ended = None
        if conn is not None:
            if not kill:
                with contextlib.suppress(OSError, ValueError):
                    conn.send(None)
            conn.close()
        if process is not None:
            if kill:
                process.kill()
            process.join(timeout=2.0)
            if process.is_alive():
                process.kill()
                process.join(timeout=2.0)


def _exit_code(process: Any) -> int | None:
    """The process's exit code once it has ended (waiting a second for that), None while it runs."""
    process.join(timeout=1.0)
    code = process.exitcode
    return None if code is None else int(code)


def _stop_all(workers: list[_Worker]) -> None:
    for worker in workers:
        worker.stop()


def _kill_all(workers: list[_Worker]) -> None:
    for worker in workers:
        worker.stop(kill=True)


class ExecutionPool(Closing):
    """Runs :class:`ExecJob` batches on ``workers`` isolated processes (default: all cores)."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        memory_bytes: int | None = DEFAULT_WORKER_MEMORY,
        kill_margin_s: float = DEFAULT_KILL_MARGIN_S,
        start_method: str = DEFAULT_START_METHOD,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
    ) -> None:
        if getattr(multiprocessing.current_process(), "_inheriting", False):
            # This is a spawned worker re-importing a script that builds a pool at import time: say so
            # here, where the mistake is, instead of letting it spawn again.
            raise WorkerStartError(f"an execution pool was created while a worker process started: {GUARD_HINT}")
        count = workers if workers is not None else (os.cpu_count() or 1)
        if count < 1:
            raise ValueError(f"workers must be >= 1, got {count}")
        # Never plain fork: the parent runs threads (this pool, progress bars), and forking a
        # multi-threaded process can deadlock the child. The fork server is single-threaded.
        context = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            _ensure_fork_server()
        self._workers = [_Worker(context, memory_bytes, start_timeout_s) for _ in range(count)]
        self._margin = kill_margin_s
        # Idle workers: a thread holds one only while it has a job to run on it. Last in, first out,
        # so a pool sized for peak concurrency (SkyRL's stepping threads) starts only as many
        # processes as were ever busy at once instead of cycling through all of them.
        self._idle: queue.LifoQueue[_Worker] = queue.LifoQueue()
        for worker in self._workers:
            self._idle.put(worker)
        self._closed = False
        self._finalizer = weakref.finalize(self, _stop_all, self._workers)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._closed

    @property
    def size(self) -> int:
        return len(self._workers)

    def worker_pids(self) -> list[int | None]:
        return [w.pid for w in self._workers]

    def run(self, job: ExecJob) -> ExecResult:
        return self.run_many([job])[0]

    def run_many(
        self,
        jobs: Sequence[ExecJob],
        *,
        on_start: OnStart | None = None,
        on_result: OnResult | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> list[ExecResult]:
        """Run every job; the i-th result belongs to the i-th job, whatever happens to workers.

        ``on_start(index, pid)`` is called each time a job starts on a worker (when it is sent, or, inside
        a chunk, when the job before it has answered): twice for a job rerun after its first worker died.
        ``meanwhile()`` is called once, in the calling thread, as soon as the workers have jobs to run:
        the caller's own work on the batch (the environment's ODT diagnoses of the answers) then overlaps
        the queries instead of following them; an exception from it is raised after the batch ends.
        Raises :class:`WorkerStartError` when a worker cannot start.
        """
        if self._closed:
            raise RuntimeError("ExecutionPool is closed")
        results: list[ExecResult | None] = [None] * len(jobs)
        taken = [0]  # jobs handed to drivers so far
        take = threading.Lock()
        drivers = max(1, min(len(self._workers), len(jobs)))

        # An exception from a caller's callback, or a worker that cannot start, stops the batch and is
        # re-raised here, after every thread has stopped; it is never mistaken for an item's own error.
        callback_errors: list[BaseException] = []
        caller = threading.get_ident()
        waiting = [meanwhile] if meanwhile is not None else []
        meanwhile_errors: list[BaseException] = []

        def caller_work() -> None:
            """Run ``meanwhile`` if it has not run (in the calling thread only), keeping its exception."""
            if waiting and threading.get_ident() == caller:
                work = waiting.pop()
                try:
                    work()
                except BaseException as error:  # the workers hold jobs: raised once they have answered
                    meanwhile_errors.append(error)

        def notify(callback: Callable[..., None] | None, *args: object) -> bool:
            """Call a caller's callback; False when it raised and the batch must stop."""
            try:
                if callback is not None:
                    callback(*args)
            except BaseException as error:
                callback_errors.append(error)
                return False
            return True

        def take_chunk() -> list[int]:
            with take:
                left = len(jobs) - taken[0]
                size = min(left, max(1, min(MAX_CHUNK, left // (drivers * CHUNKS_PER_WORKER))))
                chunk = list(range(taken[0], taken[0] + size))
                taken[0] += size
            return chunk

        def run_chunk(worker: _Worker, chunk: list[int]) -> bool:
            """Run the chunk's jobs on ``worker`` (replaced when it dies or hangs, the rest of the chunk
            sent again to the new one); False when the batch must stop."""
            deaths: dict[int, list[int | None]] = {}
            pending = chunk
            while pending:
                # Interrupted (the workers have ended) or closed meanwhile: the batch stops, and says why.
                stop = interruption()
                if stop is not None or self._closed:
                    callback_errors.append(stop or RuntimeError("ExecutionPool was closed during a batch"))
                    return False
                try:
                    pid = worker.ensure_started()
                except WorkerStartError as error:
                    callback_errors.append(error)
                    return False
                sent = pending
                pending = []
                if not notify(on_start, sent[0], pid):
                    return False
                first_death: _WorkerDiedError | None = None
                try:
                    worker.send([jobs[i] for i in sent])
                except _WorkerDiedError as death:  # the first job is the one that meets the dead worker
                    sent, pending = [], sent
                    first_death = death
                if sent:
                    caller_work()  # one driver, in the caller's thread: while the worker runs the chunk
                for position, index in enumerate(sent):
                    # The worker starts a job of a chunk when it has answered the one before: the parent
                    # hears of it no earlier, so a deadline counted from here is never short.
                    if position > 0 and not notify(on_start, index, pid):
                        worker.stop(kill=True)  # it still holds jobs of this chunk
                        return False
                    try:
                        result = worker.receive(jobs[index], self._margin)
                    except _WorkerDiedError as death:
                        first_death, pending = death, sent[position:]
                        break
                    except Exception as error:  # a bug here must not lose the other results
                        worker.stop(kill=True)
                        result = ExecResult(
                            "error", error=f"execution failed: {type(error).__name__}: {error}", failed_outside=True
                        )
                        pending = sent[position + 1 :]
                    results[index] = result
                    if not notify(on_result, index, result):
                        if position + 1 < len(sent):
                            worker.stop(kill=True)  # it still holds jobs of this chunk
                        return False
                    if result.status == "timeout" and worker.pid is None:  # killed: the rest goes again
                        pending = sent[position + 1 :]
                        break
                    if pending:  # the worker was stopped by an internal error
                        break
                if first_death is not None:
                    index = pending[0]
                    codes = deaths.setdefault(index, [])
                    codes.append(first_death.exit_code)
                    if len(codes) < ATTEMPTS_PER_JOB:
                        continue  # the query and the rest of the chunk, on a fresh worker
                    listed = ", ".join(str(code) for code in codes)
                    results[index] = ExecResult(
                        "error",
                        error=f"worker process died {len(codes)} times (exit codes {listed}) running this query",
                        failed_outside=True,
                    )
                    if not notify(on_result, index, results[index]):
                        return False
                    pending = pending[1:]
            return True

        def drive() -> None:
            worker: _Worker | None = None
            try:
                while not callback_errors:
                    chunk = take_chunk()
                    if not chunk:
                        return
                    if worker is None:  # wait for an idle worker only once there is a job for it
                        worker = self._idle.get()
                    if not run_chunk(worker, chunk):
                        return
            finally:
                if worker is not None:
                    self._idle.put(worker)

        if drivers == 1:
            drive()
        else:
            threads = [threading.Thread(target=drive, daemon=True) for _ in range(drivers)]
            for thread in threads:
                thread.start()
            caller_work()
            for thread in threads:
                thread.join()
        caller_work()  # no job was sent (the batch stopped at once)
        if callback_errors:
            raise callback_errors[0]
        if meanwhile_errors:
            raise meanwhile_errors[0]
        return [r if r is not None else ExecResult("error", error="no result", failed_outside=True) for r in results]

    def close(self) -> None:
        """Stop every worker (politely, then by force)."""
        self._closed = True
        self._finalizer()

    def __exit__(self, *exc: object) -> None:
        if any(isinstance(item, KeyboardInterrupt) for item in exc):
            # Interrupted (the CLI raises it for SIGTERM too): a worker's query is not waited for.
            self._closed = True
            _kill_all(self._workers)
        self.close()
