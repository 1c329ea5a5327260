"""The one progress display of every long job: a label, the bar, done / total, elapsed time on a
terminal; plain lines that a batch log can read (Slurm, CI, ``nohup``) everywhere else.

Which one is chosen by ``PROGRESS_SQL_PROGRESS`` (:data:`MODE_ENV`): ``auto`` (the default) draws rich's
live bars when the stream the progress goes to is a terminal and writes plain lines when it is not
(rich's live display draws nothing into a file until the end); ``rich``, ``plain`` and ``off`` force one.
A plain phase writes a line when it starts, one every ``PROGRESS_SQL_PROGRESS_INTERVAL`` seconds
(:data:`INTERVAL_ENV`, default 30; 0: at every step) while it runs, with done / total, rate and ETA, and
one when it ends. Hugging Face's own tqdm bars (transformers' "Loading weights", "Writing model shards")
are turned off wherever our progress is not rich's: in a log they are carriage-return noise.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, Task, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from progress_sql.errors import ConfigError

#: Environment variable choosing the display: auto (rich on a terminal, plain lines elsewhere), rich, plain, off.
MODE_ENV = "PROGRESS_SQL_PROGRESS"
#: Environment variable: seconds between a running phase's plain lines (0: a line at every step).
INTERVAL_ENV = "PROGRESS_SQL_PROGRESS_INTERVAL"
MODES = ("auto", "rich", "plain", "off")
DEFAULT_INTERVAL_S = 30.0
#: Hugging Face hub's switch for its tqdm bars (read when ``huggingface_hub`` is imported).
HF_BARS_ENV = "HF_HUB_DISABLE_PROGRESS_BARS"


def progress_mode(console: Console) -> str:
    """``rich``, ``plain`` or ``off`` for a progress shown on ``console``, from :data:`MODE_ENV`."""
    chosen = (os.environ.get(MODE_ENV) or "auto").strip().lower()
    if chosen not in MODES:
        raise ConfigError(f"{MODE_ENV} must be one of {', '.join(MODES)}, got {chosen!r}")
    if chosen != "auto":
        return chosen
    live = (console.is_terminal and not console.is_dumb_terminal) or console.is_jupyter
    return "rich" if live else "plain"


def progress_interval() -> float:
    """Seconds between a running phase's plain lines, from :data:`INTERVAL_ENV`."""
    raw = os.environ.get(INTERVAL_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_INTERVAL_S
    try:
        seconds = float(raw)
    except ValueError:
        raise ConfigError(f"{INTERVAL_ENV} must be a number of seconds, got {raw!r}") from None
    if not seconds >= 0:  # also NaN
        raise ConfigError(f"{INTERVAL_ENV} must be >= 0 seconds, got {raw!r}")
    return seconds


def quiet_third_party_bars() -> None:
    """Turn Hugging Face's tqdm bars off (transformers' "Loading weights" and "Writing model shards", the
    hub's downloads) through their own switches: the hub's environment variable for a process that has
    not imported it yet, their functions where they are imported. A user's own ``HF_HUB_DISABLE_PROGRESS_BARS``
    (0 included) wins."""
    if os.environ.get(HF_BARS_ENV) is not None:
        if os.environ[HF_BARS_ENV].strip().lower() not in ("1", "true", "yes", "on"):
            return
    else:
        os.environ[HF_BARS_ENV] = "1"
    hub = sys.modules.get("huggingface_hub.utils")
    if hub is not None:
        hub.disable_progress_bars()
    hf_logging = sys.modules.get("transformers.utils.logging")
    if hf_logging is not None:
        hf_logging.disable_progress_bar()


def _clock_text(seconds: float) -> str:
    return str(timedelta(seconds=max(0, round(seconds))))


def _count(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"


def _reached(task: Task) -> bool:
    return task.total is not None and task.completed >= task.total


def _rate_text(rate: float) -> str:
    return f"{rate:.1f}/s" if rate >= 1 else f"{1 / rate:.1f} s each"


class PlainProgress(Progress):
    """A rich :class:`Progress` that writes plain lines instead of drawing: for each task, a line when it
    is added, one at most every ``interval_s`` seconds while it runs (done / total, rate, ETA, elapsed),
    and one when it ends (its total reached, or, when the progress closes, where it stopped).

    The latest task added is the running phase: a background ticker writes its line every interval even
    when no step ends (a slow RL step, one measurement of ``total`` 1); other tasks (an outer count, a
    phase that stopped short of its total) write lines only when they advance. ``clock`` (monotonic
    seconds) and ``wall`` (epoch seconds, for the time of day that starts each line) are injectable;
    ``ticker=False`` leaves the timed lines to :meth:`tick` (tests)."""

    def __init__(
        self,
        label: str,
        *,
        console: Console,
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        ticker: bool = True,
    ) -> None:
        super().__init__(TextColumn(label), console=console, auto_refresh=False, get_time=clock)
        self._name_format = Text.from_markup(label).plain
        self._names_description = "{task.description}" in label
        self._interval = interval_s
        self._clock = clock
        self._wall = wall
        self._ticker = ticker
        self._last_line: dict[TaskID, float] = {}
        self._last_step: dict[TaskID, float] = {}
        self._ended: set[TaskID] = set()
        self._current: TaskID | None = None
        self._stop_ticker = threading.Event()
        self._thread: threading.Thread | None = None

    # -- rich's Progress API, each change followed by the lines it calls for --

    def start(self) -> None:
        quiet_third_party_bars()
        if self._ticker and self._interval > 0 and self._thread is None:
            self._stop_ticker.clear()
            self._thread = threading.Thread(target=self._tick_loop, name="progress-lines", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop_ticker.set()
            self._thread.join()
            self._thread = None
        with self._lock:
            for task in self.tasks:
                if task.id not in self._ended:
                    self._end(task)

    def refresh(self) -> None:
        """Nothing to redraw: lines are written as the tasks change."""

    def add_task(
        self,
        description: str,
        start: bool = True,
        total: float | None = 100.0,
        completed: int = 0,
        visible: bool = True,
        **fields: Any,
    ) -> TaskID:
        with self._lock:
            task_id = super().add_task(description, start, total, completed, visible, **fields)
            now = self._clock()
            self._last_line[task_id] = self._last_step[task_id] = now
            self._current = task_id
            task = self._tasks[task_id]
            size = f", {_count(task.completed)}/{_count(task.total)}" if task.total is not None else ""
            self._write(task, f"started{size}")
            self._changed(task_id)
        return task_id

    def update(
        self,
        task_id: TaskID,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        visible: bool | None = None,
        refresh: bool = False,
        **fields: Any,
    ) -> None:
        with self._lock:
            before = self._tasks[task_id].completed
            super().update(
                task_id, total=total, completed=completed, advance=advance, description=description,
                visible=visible, refresh=refresh, **fields,
            )  # fmt: skip
            if self._tasks[task_id].completed != before:
                self._last_step[task_id] = self._clock()
            self._changed(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        with self._lock:
            super().advance(task_id, advance)
            self._last_step[task_id] = self._clock()
            self._changed(task_id)

    def stop_task(self, task_id: TaskID) -> None:
        with self._lock:
            super().stop_task(task_id)
            if task_id not in self._ended:
                self._end(self._tasks[task_id])

    # -- the lines --

    def tick(self) -> None:
        """Write the running phase's line when an interval has passed since its last one."""
        with self._lock:
            current = self._current
            if current is None or current in self._ended or current not in self._tasks:
                return
            if self._clock() - self._last_line[current] >= self._interval:
                self._progress_line(self._tasks[current])

    def _tick_loop(self) -> None:
        poll = min(self._interval, 1.0)
        while not self._stop_ticker.wait(poll):
            self.tick()

    def _changed(self, task_id: TaskID) -> None:
        task = self._tasks[task_id]
        if task_id in self._ended:
            return
        if _reached(task):
            self._end(task)
        elif task.completed and self._clock() - self._last_line[task_id] >= self._interval:
            self._progress_line(task)

    def _progress_line(self, task: Task) -> None:
        now = self._clock()
        elapsed = now - (task.start_time if task.start_time is not None else now)
        parts = [_count(task.completed) if task.total is None else f"{_count(task.completed)}/{_count(task.total)}"]
        if task.total:
            parts[0] += f" ({100 * task.completed / task.total:.0f}%)"
        rate = task.completed / elapsed if elapsed > 0 else 0.0
        if rate > 0:
            parts.append(_rate_text(rate))
            if task.total is not None:
                parts.append(f"ETA {_clock_text(max(0.0, task.total - task.completed) / rate)}")
        parts.append(f"{_clock_text(elapsed)} elapsed")
        self._write(task, ", ".join(parts))

    def _end(self, task: Task) -> None:
        self._ended.add(task.id)
        start = task.start_time if task.start_time is not None else self._clock()
        done = _count(task.completed) if task.total is None else f"{_count(task.completed)}/{_count(task.total)}"
        if task.total is None or _reached(task):
            took = self._clock() - start
            rate = task.completed / took if took > 0 and task.completed else 0.0
            self._write(task, f"done, {done} in {_clock_text(took)}" + (f" ({_rate_text(rate)})" if rate else ""))
        else:  # stopped short of its total (a warm start that reached its target): timed to its last step
            self._write(task, f"ended at {done} after {_clock_text(self._last_step[task.id] - start)}")

    def _write(self, task: Task, text: str) -> None:
        name = self._name_format.format(task=task)
        if not self._names_description and task.description:
            name = f"{name}: {task.description}"
        stamp = time.strftime("%H:%M:%S", time.localtime(self._wall()))
        self._last_line[task.id] = self._clock()
        self.console.print(f"[{stamp}] {name}: {text}", markup=False, highlight=False, soft_wrap=True, emoji=False)


def progress_bar(label: str, *, console: Console | None = None, quiet: bool = False) -> Progress:
    """The progress of a long job (use it as a context manager) on ``console`` (stderr by default): rich's
    live bars on a terminal, :class:`PlainProgress` lines elsewhere, nothing when ``quiet`` (``--json``
    output) or off (:func:`progress_mode`).

    ``label`` is a rich text-column format (``"{task.description}"`` shows each task's own text)."""
    console = console or Console(stderr=True)
    mode = "off" if quiet else progress_mode(console)
    if mode == "plain":
        return PlainProgress(label, console=console, interval_s=progress_interval())
    if mode == "off":
        quiet_third_party_bars()
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=mode == "off",
        disable=mode == "off",
    )


#: A long run's phase callback: ``phase(description, total)`` starts one and returns its ``advance(n)``.
Phase = Callable[[str, int], Callable[[int], None]]


def phases(progress: Progress) -> Phase:
    """A long run's phases as bars of ``progress``: ``phase(description, total)`` adds one and returns
    its ``advance(n)`` (the ``Phase`` callback of ``training``)."""

    def phase(description: str, total: int) -> Callable[[int], None]:
        job = progress.add_task(description, total=total)
        return lambda n: progress.advance(job, n)

    return phase
