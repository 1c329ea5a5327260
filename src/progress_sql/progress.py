"""The one progress-bar layout of every long job: a label, the bar, done / total, elapsed time."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def progress_bar(label: str, *, console: Console | None = None, quiet: bool = False) -> Progress:
    """A rich :class:`Progress` (use it as a context manager) on ``console`` (stderr by default).

    ``label`` is a rich text-column format (``"{task.description}"`` shows each task's own text);
    ``quiet`` hides the bar (for ``--json`` output).
    """
    return Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console or Console(stderr=True),
        transient=quiet,
        disable=quiet,
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
