"""The task registry: a task name (or a path) plus a data folder give the examples to work on.

>>> sorted(TASKS)
['bird-dev', 'spider-dev']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from progress_sql.data.loaders import load_bird, load_spider
from progress_sql.errors import DatasetError
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class Task:
    """A benchmark split in its release layout, relative to ``--data-dir``."""

    name: str
    questions: str
    db_root: str
    loader: Callable[[str | Path, str | Path], list[Example]]
    description: str

    def load(self, data_dir: str | Path) -> list[Example]:
        root = Path(data_dir)
        if not root.is_dir():
            raise DatasetError(f"data folder not found: {root} (task {self.name} expects {self.questions} there)")
        return self.loader(root / self.questions, root / self.db_root)


TASKS: dict[str, Task] = {
    "spider-dev": Task("spider-dev", "dev.json", "database", load_spider, "Spider 1.0 dev (1034 questions)"),
    "bird-dev": Task("bird-dev", "dev.json", "dev_databases", load_bird, "BIRD dev (1534 questions)"),
}


def load_task(task: str, data_dir: str | Path | None) -> list[Example]:
    """Examples of a registered task, or of a Spider-format questions file given by path.

    For a path, databases resolve under ``data_dir/database`` (or the file's own folder's
    ``database/`` when ``data_dir`` is None).
    """
    if task in TASKS:
        if data_dir is None:
            raise DatasetError(f"task {task} needs --data-dir (the folder holding {TASKS[task].questions})")
        return TASKS[task].load(data_dir)
    path = Path(task)
    if not path.is_file():
        known = ", ".join(sorted(TASKS))
        raise DatasetError(f"unknown task {task!r}: not a registered task ({known}) nor an existing file")
    root = Path(data_dir) if data_dir is not None else path.parent
    return load_spider(path, root / "database")
