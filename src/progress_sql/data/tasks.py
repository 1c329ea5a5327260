"""The task registry: a task name (or a path) plus a data folder give the examples to work on
(docs/data.md#tasks).

>>> sorted(TASKS)  # doctest: +NORMALIZE_WHITESPACE
['bird-dev', 'bird-train', 'embedded-ambiguous', 'embedded-write', 'spider-dev', 'spider-dk', 'spider-realistic',
 'spider-syn', 'spider-test', 'spider-train', 'synsql']
>>> TASKS["bird-dev"].preset, TASKS["spider-dev"].breakdown
('bird', 'hardness')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from progress_sql.data.embedded import AMBIGUOUS_FILE, WRITE_TASKS_FILE, ambiguous_questions, write_tasks
from progress_sql.data.loaders import (
    database_problem,
    load_bird,
    load_spider,
    load_spider_syn,
    load_synsql,
    problem_kind,
)
from progress_sql.errors import DatasetError
from progress_sql.types import Example

#: How a task's examples are split by difficulty: Spider's hardness rules on the gold SQL, or the
#: dataset's own ``difficulty`` field (BIRD: simple / moderate / challenging).
Breakdown = Literal["hardness", "difficulty"]
#: Spider's and BIRD's licence (and, share-alike, of every set derived from them), as the Hub spells it.
CC_BY_SA = "cc-by-sa-4.0"
Loader = Callable[[str | Path, str | Path], list[Example]]


@dataclass(frozen=True, slots=True)
class Task:
    """A benchmark split in its release layout, relative to ``--data-dir``."""

    name: str
    questions: str
    db_root: str
    loader: Loader
    description: str
    preset: str = "spider"
    breakdown: Breakdown = "hardness"
    suite: str | None = None
    version: str = "1"
    #: Held out for evaluation: the leakage guard (``progress_sql.data.leakage``) refuses training
    #: rows on this task's databases or schemas.
    evaluation: bool = False
    #: Shipped with the package (data/embedded): no ``--data-dir`` needed, ``loader`` ignores its paths.
    embedded: bool = False
    #: The data's licence as the Hugging Face Hub spells it (``unknown``: not recorded here, and the cards
    #: of ``export`` and ``train`` say so). Spider, BIRD and what derives from them (share-alike): CC BY-SA 4.0.
    licence: str = "unknown"

    def load(self, data_dir: str | Path | None) -> list[Example]:
        if self.embedded:
            return self.loader(self.questions, self.db_root)
        if data_dir is None:
            raise DatasetError(f"task {self.name} needs --data-dir (the folder holding {self.questions})")
        root = Path(data_dir)
        if not root.is_dir():
            raise DatasetError(f"data folder not found: {root} (task {self.name} expects {self.questions} there)")
        return self.loader(root / self.questions, root / self.db_root)


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task("spider-dev", "dev.json", "database", load_spider, "Spider 1.0 dev (1034 questions)", evaluation=True,
             licence=CC_BY_SA),
        Task(
            "spider-test",
            "test.json",
            "test_database",
            load_spider,
            "Spider 1.0 test (2147 questions), the release's test.json and test_database/",
            evaluation=True,
            licence=CC_BY_SA,
        ),
        Task(
            "bird-dev",
            "dev.json",
            "dev_databases",
            load_bird,
            "BIRD dev (1534 questions); runs on the databases present",
            preset="bird",
            breakdown="difficulty",
            evaluation=True,
            licence=CC_BY_SA,
        ),
        Task(
            "spider-dk",
            "Spider-DK.json",
            "database",
            load_spider,
            "Spider-DK (535 questions needing domain knowledge), file beside Spider's dev.json",
            evaluation=True,
            licence=CC_BY_SA,
        ),
        Task(
            "spider-syn",
            "Spider-Syn/dev.json",
            "database",
            load_spider_syn,
            "Spider-Syn dev (1034 questions with synonyms, SpiderSynQuestion), in Spider's folder",
            evaluation=True,
            licence=CC_BY_SA,
        ),
        Task(
            "spider-realistic",
            "spider-realistic.json",
            "database",
            load_spider,
            "Spider-Realistic (508 questions without explicit column names), file beside Spider's dev.json",
            evaluation=True,
            licence=CC_BY_SA,
        ),
        # Training splits (export and train): the paper's RL data mixes BIRD train, Spider train and SynSQL.
        Task("spider-train", "train_spider.json", "database", load_spider, "Spider 1.0 train (7000 questions)",
             licence=CC_BY_SA),
        Task(
            "bird-train",
            "train.json",
            "train_databases",
            load_bird,
            "BIRD train (9428 questions), the release's train/ folder",
            preset="bird",
            breakdown="difficulty",
            licence=CC_BY_SA,
        ),
        Task(
            "synsql",
            "data.json",
            "databases",
            load_synsql,
            "SynSQL-2.5M (data.json, databases/); rows without their database export as unverified",
            breakdown="difficulty",
        ),
        # Embedded sets of the other task kinds (docs/tasks.md#the-embedded-sets).
        Task("embedded-write", WRITE_TASKS_FILE, ".", lambda _q, _r: write_tasks(),
             "write tasks over the embedded databases (checked by queries on the resulting state)",
             breakdown="difficulty", embedded=True, licence=CC_BY_SA),
        Task("embedded-ambiguous", AMBIGUOUS_FILE, ".", lambda _q, _r: ambiguous_questions(),
             "Spider dev questions over the embedded databases made ambiguous, with labelled slots",
             breakdown="difficulty", embedded=True, licence=CC_BY_SA),
    )
}  # fmt: skip

#: The spec of a Spider-format questions file given by path (``questions.json + database/``).
SPIDER_FORMAT = Task("spider-format", "", "database", load_spider, "a Spider-format questions file")


def path_database_folder(questions: Path, root: Path) -> Path:
    """Where a questions file given by path finds its databases: ``root/<stem>_database`` when that
    folder exists (Spider's ``test.json`` + ``test_database/``), else ``root/database``."""
    own = root / f"{questions.stem}_database"
    return own if own.is_dir() else root / "database"


def resolve_task(
    task: str,
    data_dir: str | Path | None,
    *,
    questions: str | None = None,
    db_root: str | Path | None = None,
    need_databases: bool = False,
) -> tuple[Task, list[Example]]:
    """The spec and the examples of a registered task, or of a Spider-format questions file.

    For a path, databases resolve under ``data_dir`` (or the file's own folder when ``data_dir`` is
    None): :func:`path_database_folder`. ``db_root`` names the databases folder outright (either
    kind of task). ``questions`` replaces a registered task's questions file (relative to
    ``data_dir``), e.g. a sample of SynSQL or a reduced Spider train file. ``need_databases``: the
    caller runs SQL on the databases, so a data set none of whose databases can be used is refused
    (:func:`require_databases`; ``export`` passes rows without a database through, unverified).
    """
    spec, examples, folder = _resolve(task, data_dir, questions, db_root)
    if need_databases and not spec.embedded:
        require_databases(examples, folder, spec.name if spec is not SPIDER_FORMAT else task)
    return spec, examples


def _resolve(
    task: str, data_dir: str | Path | None, questions: str | None, db_root: str | Path | None
) -> tuple[Task, list[Example], Path]:
    """:func:`resolve_task`'s spec and examples, and the databases folder they resolve against."""
    if task in TASKS:
        spec = TASKS[task] if questions is None else replace(TASKS[task], questions=questions)
        if spec.embedded:
            return spec, spec.load(None), Path(spec.db_root)
        if data_dir is None:
            raise DatasetError(f"task {task} needs --data-dir (the folder holding {spec.questions})")
        root = Path(data_dir)
        if not root.is_dir():
            raise DatasetError(f"data folder not found: {root} (task {spec.name} expects {spec.questions} there)")
        folder = Path(db_root) if db_root is not None else root / spec.db_root
        return spec, spec.loader(root / spec.questions, folder), folder
    if questions is not None:
        raise DatasetError(f"a questions file ({questions}) can only replace a registered task's, not {task!r}")
    path = Path(task)
    if not path.is_file():
        known = ", ".join(sorted(TASKS))
        raise DatasetError(f"unknown task {task!r}: not a registered task ({known}) nor an existing file")
    root = Path(data_dir) if data_dir is not None else path.parent
    folder = Path(db_root) if db_root is not None else path_database_folder(path, root)
    return SPIDER_FORMAT, load_spider(path, folder), folder


def require_databases(examples: Sequence[Example], folder: Path, task: str) -> None:
    """Refuse a data set whose databases cannot be used at all: ``folder`` absent, or every example's
    database absent or bad (DatasetError naming the path). A bad database among usable ones is its
    examples' own problem: the command skips them with :func:`database_problem`'s reason. Each distinct
    database is checked once."""
    if not folder.is_dir():
        raise DatasetError(f"databases folder not found: {folder} (task {task} expects <db_id>/<db_id>.sqlite there)")
    uses = Counter((e.db_id, e.db_path) for e in examples)
    first_use = {(e.db_id, e.db_path): e for e in reversed(examples)}
    problems = {key: database_problem(first_use[key]) for key in uses}
    if not problems or any(problem is None for problem in problems.values()):
        return
    kinds: Counter[str] = Counter()
    for key, problem in problems.items():
        kinds[problem_kind(problem or "")] += uses[key]
    counted = ", ".join(f"{kind} {count}" for kind, count in kinds.most_common())
    first = problems[(examples[0].db_id, examples[0].db_path)]
    raise DatasetError(f"no database of task {task} can be used ({len(examples)} examples: {counted}); first: {first}")


def task_licence(task: str) -> str:
    """The licence of a registered task's data (:attr:`Task.licence`); ``unknown`` for a questions file
    given by path or another name."""
    spec = TASKS.get(task)
    return spec.licence if spec is not None else "unknown"


def load_task(task: str, data_dir: str | Path | None) -> list[Example]:
    """Examples of a registered task, or of a Spider-format questions file given by path."""
    return resolve_task(task, data_dir)[1]
