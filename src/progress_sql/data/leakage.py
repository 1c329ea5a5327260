"""The leakage guard: training rows whose database, or whose schema (its
:mod:`~progress_sql.data.fingerprint`), belongs to a registered evaluation task are refused unless
the caller allows them explicitly (seed 002, point 8). ``export``, ``train`` and the mixture sampler
call :func:`check_leakage`; what it reads and what the manifest records: docs/export.md#the-leakage-guard.

Which databases are evaluation databases comes from the task registry (``Task.evaluation`` in
:mod:`progress_sql.data.tasks`), not from a list written here: each evaluation task's questions
file is read wherever it is found beside its databases folder: in the training data's own folders
(Spider train's folder holds Spider dev's ``dev.json``; a database ``<root>/<db_root>/<db>/<db>.sqlite``
names ``<root>``) and in any further folders given (``--eval-data-dir``). :func:`find_overlaps` is pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from progress_sql.data.fingerprint import schema_fingerprint
from progress_sql.data.tasks import TASKS, Task
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.types import Example

#: The option that lets evaluation databases into training data (the CLI's spelling).
ALLOW_OPTION = "--allow-eval-overlap"


@dataclass(frozen=True, slots=True)
class EvaluationIndex:
    """The evaluation databases found: db_id -> the evaluation tasks that use it, schema fingerprint
    -> (task, db_id) pairs, and which questions files were read (``task: path``)."""

    by_name: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    by_fingerprint: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    read: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Overlap:
    """Training examples on ``db_id`` (from ``source``) that meet evaluation task ``task``'s database
    ``eval_db``: by name, or by schema fingerprint under another name."""

    source: str
    db_id: str
    task: str
    eval_db: str
    by: Literal["database", "fingerprint"]
    examples: int

    def describe(self) -> str:
        how = "is a database" if self.by == "database" else f"has the schema of {self.eval_db}, a database"
        return f"{self.db_id} ({self.examples} examples of {self.source}) {how} of {self.task}"


@dataclass(frozen=True, slots=True)
class LeakageDecision:
    """What the guard found and decided; its :meth:`to_dict` goes into manifests and summaries."""

    allowed: bool
    overlaps: tuple[Overlap, ...]
    evaluation_files: tuple[str, ...]
    evaluation_databases: int

    @property
    def clean(self) -> bool:
        return not self.overlaps

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": "clean" if self.clean else "allowed" if self.allowed else "refused",
            "allow_eval_overlap": self.allowed,
            "evaluation_files": list(self.evaluation_files),
            "evaluation_databases": self.evaluation_databases,
            "overlaps": [asdict(o) for o in self.overlaps],
        }


def evaluation_tasks() -> list[Task]:
    """The registered evaluation tasks (``Task.evaluation``)."""
    return [task for task in TASKS.values() if task.evaluation]


def data_folders(examples: Iterable[Example]) -> list[Path]:
    """The release folders the examples' databases sit in (``<root>/<db_root>/<db>/<db>.sqlite`` ->
    ``<root>``), in first-seen order."""
    found: dict[Path, None] = {}
    for example in examples:
        parents = Path(example.db_path).absolute().parents
        if len(parents) > 2:
            found.setdefault(parents[2])
    return list(found)


def evaluation_index(folders: Iterable[str | Path]) -> EvaluationIndex:
    """Read every evaluation task's questions file found in ``folders``: the databases its questions
    use, and the fingerprints of those present."""
    names: dict[str, set[str]] = {}
    prints: dict[str, set[tuple[str, str]]] = {}
    read: list[str] = []
    seen: set[Path] = set()
    for folder in folders:
        root = Path(folder).resolve()
        for task in evaluation_tasks():
            questions = root / task.questions
            # Spider dev and BIRD dev both call their file dev.json: the databases folder tells them apart
            if questions in seen or not questions.is_file() or not (root / task.db_root).is_dir():
                continue
            seen.add(questions)
            try:
                examples = task.load(root)
            except DatasetError:
                continue  # a file of another format under the same name says nothing about this task
            read.append(f"{task.name}: {questions}")
            for example in examples:
                names.setdefault(example.db_id, set()).add(task.name)
            for db_id, path in {e.db_id: e.db_path for e in examples}.items():
                if Path(path).is_file():
                    prints.setdefault(schema_fingerprint(path), set()).add((task.name, db_id))
    return EvaluationIndex(
        {db: tuple(sorted(tasks)) for db, tasks in names.items()},
        {fp: tuple(sorted(pairs)) for fp, pairs in prints.items()},
        tuple(read),
    )


def find_overlaps(
    drawn: Sequence[tuple[str, Example]], index: EvaluationIndex, fingerprints: Mapping[str, str]
) -> list[Overlap]:
    """Per (source, training database) the evaluation database it meets, by name first, else by
    schema fingerprint (``fingerprints``: db_path -> fingerprint of the training databases present)."""
    counts = Counter((source, e.db_id, e.db_path) for source, e in drawn)
    overlaps: list[Overlap] = []
    for (source, db_id, db_path), n in counts.items():
        if db_id in index.by_name:
            overlaps += [Overlap(source, db_id, task, db_id, "database", n) for task in index.by_name[db_id]]
            continue
        for task, eval_db in index.by_fingerprint.get(fingerprints.get(db_path, ""), ()):
            overlaps.append(Overlap(source, db_id, task, eval_db, "fingerprint", n))
    return sorted(overlaps, key=lambda o: (o.task, o.db_id, o.source))


def check_leakage(
    drawn: Sequence[tuple[str, Example]],
    *,
    allow: bool = False,
    eval_data_dirs: Sequence[str | Path] = (),
    extra_folders: Sequence[str | Path] = (),
) -> LeakageDecision:
    """The guard: find the training examples (``(source, example)`` pairs) on evaluation databases or
    schemas and raise a ConfigError naming each database and evaluation task, unless ``allow``.
    Evaluation files are looked for in the examples' data folders, ``extra_folders`` (the training
    sources' ``--data-dir``s) and ``eval_data_dirs``."""
    folders = [*data_folders(e for _, e in drawn), *map(Path, extra_folders), *map(Path, eval_data_dirs)]
    index = evaluation_index(folders)
    paths = {e.db_path for _, e in drawn if Path(e.db_path).is_file()}
    fingerprints = {path: schema_fingerprint(path) for path in paths} if index.by_fingerprint else {}
    overlaps = tuple(find_overlaps(drawn, index, fingerprints))
    decision = LeakageDecision(allow, overlaps, index.read, len(index.by_name))
    if overlaps and not allow:
        listed = "; ".join(o.describe() for o in overlaps[:12])
        more = f"; and {len(overlaps) - 12} more" if len(overlaps) > 12 else ""
        raise ConfigError(
            f"the training data holds evaluation databases: {listed}{more}. Training on them leaks the "
            f"evaluation set (docs/export.md#the-leakage-guard): leave them out, or pass {ALLOW_OPTION} "
            "to train on them anyway (the manifest records it)"
        )
    return decision
