"""A training mixture: a seeded, duplicate-free sample from several datasets (the paper's 20,000
examples from BIRD train, Spider train and SynSQL-2.5M); :func:`sample_mixture` is pure. The spec
(``progress-sql export --mix``) and the sampling rules: docs/export.md#mixtures.

>>> from progress_sql.types import Example
>>> def make(n, db): return tuple(Example(i, f"q{i}", db, f"{db}.sqlite", f"SELECT {i}") for i in range(n))
>>> mix = sample_mixture([MixtureSource("a", make(10, "a"), weight=3), MixtureSource("b", make(10, "b"), weight=1)],
...                      total=8, seed=1)
>>> mix.counts, len(mix.items)
({'a': 6, 'b': 2}, 8)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.data.leakage import LeakageDecision, check_leakage
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.jsonio import read_json
from progress_sql.types import Example


@dataclass(frozen=True, slots=True)
class MixtureSource:
    """One dataset of a mixture: exactly one of ``count`` (examples drawn), ``weight`` (share of
    what ``total`` leaves after the counts) or ``everything`` (every example, after duplicates: the
    spec's ``"count": "all"``)."""

    name: str
    examples: tuple[Example, ...]
    count: int | None = None
    weight: float | None = None
    everything: bool = False

    def __post_init__(self) -> None:
        if (self.count is not None) + (self.weight is not None) + self.everything != 1:
            raise ConfigError(f'mixture source {self.name}: give exactly one of count or weight (or "count": "all")')
        if self.count is not None and self.count < 0:
            raise ConfigError(f"mixture source {self.name}: count must be >= 0, got {self.count}")
        if self.weight is not None and not self.weight > 0:
            raise ConfigError(f"mixture source {self.name}: weight must be > 0, got {self.weight}")


@dataclass(frozen=True, slots=True)
class Drawn:
    """A sampled example and the name of the source it came from."""

    source: str
    example: Example


@dataclass(frozen=True, slots=True)
class Mixture:
    """The sample (shuffled), and per source: examples drawn, available, and duplicates removed."""

    items: tuple[Drawn, ...]
    counts: dict[str, int]
    available: dict[str, int]
    duplicates: dict[str, int]
    seed: int


def _key(example: Example) -> tuple[str, str, str]:
    return example.db_id, " ".join(example.question.lower().split()), " ".join(example.gold_sql.split())


def allocate(weights: Mapping[str, float], total: int) -> dict[str, int]:
    """Split ``total`` in proportion to ``weights`` (largest remainder; ties go to the earlier name).

    >>> allocate({"a": 1, "b": 1, "c": 1}, 10)
    {'a': 4, 'b': 3, 'c': 3}
    """
    whole = sum(weights.values())
    exact = {name: total * weight / whole for name, weight in weights.items()}
    counts = {name: int(share) for name, share in exact.items()}
    order = sorted(exact, key=lambda name: -(exact[name] - counts[name]))  # stable: earlier name first on ties
    for name in order[: total - sum(counts.values())]:
        counts[name] += 1
    return counts


def sample_mixture(sources: Sequence[MixtureSource], *, total: int | None = None, seed: int = 0) -> Mixture:
    """Draw each source's share without replacement, then shuffle the union; deterministic in ``seed``."""
    names = [source.name for source in sources]
    if len(set(names)) != len(names):
        raise ConfigError(f"mixture source names must be unique, got {names}")
    if not sources:
        raise ConfigError("a mixture needs at least one source")
    seen: set[tuple[str, str, str]] = set()
    unique: dict[str, list[Example]] = {}
    duplicates: dict[str, int] = {}
    for source in sources:
        kept = []
        for example in source.examples:
            key = _key(example)
            if key not in seen:
                seen.add(key)
                kept.append(example)
        unique[source.name] = kept
        duplicates[source.name] = len(source.examples) - len(kept)
    counts = {s.name: s.count for s in sources if s.count is not None}
    counts.update({s.name: len(unique[s.name]) for s in sources if s.everything})
    weighted = {s.name: s.weight for s in sources if s.weight is not None}
    if weighted:
        if total is None:
            raise ConfigError("a mixture with weights needs a total")
        rest = total - sum(counts.values())
        if rest < 0:
            raise ConfigError(f"the fixed counts ({sum(counts.values())}) exceed the total ({total})")
        counts.update(allocate(weighted, rest))
    elif total is not None and total != sum(counts.values()):
        raise ConfigError(f"the counts add up to {sum(counts.values())}, not the total {total}")
    items: list[Drawn] = []
    for source in sources:
        pool, wanted = unique[source.name], counts[source.name]
        if wanted > len(pool):
            raise DatasetError(
                f"mixture source {source.name}: {wanted} examples asked for, {len(pool)} available "
                f"({duplicates[source.name]} duplicates removed)"
            )
        chosen = sorted(random.Random(f"{seed}:{source.name}").sample(range(len(pool)), wanted))
        items.extend(Drawn(source.name, pool[i]) for i in chosen)
    random.Random(seed).shuffle(items)
    return Mixture(
        tuple(items),
        {name: counts[name] for name in names},
        {name: len(unique[name]) for name in names},
        duplicates,
        seed,
    )


# -- the JSON spec (the I/O edge) ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """Where one source's examples come from, and its share."""

    name: str
    task: str
    data_dir: str | None
    questions: str | None = None
    db_ids: tuple[str, ...] = ()
    count: int | None = None
    weight: float | None = None
    everything: bool = False


@dataclass(frozen=True, slots=True)
class MixtureSpec:
    sources: tuple[SourceSpec, ...]
    total: int | None = None
    seed: int = 0


_SOURCE_KEYS = {"name", "task", "data_dir", "questions", "db_ids", "count", "weight"}


def parse_mixture_spec(data: Any, base_dir: str | Path = ".") -> MixtureSpec:
    """A :class:`MixtureSpec` from parsed JSON; relative data folders resolve against ``base_dir``."""
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list) or not data["sources"]:
        raise ConfigError('a mixture spec is a JSON object with a non-empty "sources" list')
    unknown = set(data) - {"sources", "total", "seed"}
    if unknown:
        raise ConfigError(f"unknown mixture spec keys: {', '.join(sorted(unknown))} (known: sources, total, seed)")
    sources = []
    for number, item in enumerate(data["sources"]):
        if not isinstance(item, dict) or not isinstance(item.get("task"), str):
            raise ConfigError(f'mixture source {number}: an object with a "task" string')
        extra = set(item) - _SOURCE_KEYS
        if extra:
            raise ConfigError(f"mixture source {number}: unknown keys {', '.join(sorted(extra))}")
        data_dir = item.get("data_dir")
        db_ids = item.get("db_ids", [])
        if not isinstance(db_ids, list) or not all(isinstance(d, str) for d in db_ids):
            raise ConfigError(f"mixture source {number}: db_ids must be a list of database names")
        sources.append(
            SourceSpec(
                name=str(item.get("name") or Path(item["task"]).stem),
                task=item["task"],
                data_dir=str(Path(base_dir) / data_dir) if isinstance(data_dir, str) else None,
                questions=item.get("questions"),
                db_ids=tuple(db_ids),
                count=None if item.get("count") == "all" else _number(item, "count", int, number),
                everything=item.get("count") == "all",
                weight=_number(item, "weight", float, number),
            )
        )
    return MixtureSpec(tuple(sources), _number(data, "total", int, "spec"), _number(data, "seed", int, "spec") or 0)


def _number(item: Mapping[str, Any], key: str, kind: type[Any], where: object) -> Any:
    value = item.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise ConfigError(f"mixture {where}: {key} must be {'an integer' if kind is int else 'a number'}")
    return kind(value)


def read_mixture_spec(path: str | Path) -> MixtureSpec:
    """Read a JSON mixture spec file."""
    path = Path(path)
    return parse_mixture_spec(read_json(path, "mixture spec"), path.parent)


def load_sources(spec: MixtureSpec) -> list[MixtureSource]:
    """Load every source's examples through the task registry (``db_ids`` keeps those databases)."""
    from progress_sql.data.tasks import resolve_task

    sources = []
    for source in spec.sources:
        examples = resolve_task(source.task, source.data_dir, questions=source.questions)[1]
        if source.db_ids:
            examples = [e for e in examples if e.db_id in source.db_ids]
            if not examples:
                raise DatasetError(f"mixture source {source.name}: no example on {', '.join(source.db_ids)}")
        sources.append(MixtureSource(source.name, tuple(examples), source.count, source.weight, source.everything))
    return sources


def draw_mixture(
    spec: MixtureSpec, *, allow_eval_overlap: bool = False, eval_data_dirs: Sequence[str | Path] = ()
) -> tuple[Mixture, LeakageDecision]:
    """The mixture a spec describes, through the leakage guard: a drawn example on a database or
    schema of a registered evaluation task is a ConfigError naming both, unless ``allow_eval_overlap``
    (the decision is returned for the manifest). The sampler for training data: ``export``, ``train``."""
    mixture = sample_mixture(load_sources(spec), total=spec.total, seed=spec.seed)
    decision = check_leakage(
        [(d.source, d.example) for d in mixture.items],
        allow=allow_eval_overlap,
        eval_data_dirs=eval_data_dirs,
        extra_folders=[s.data_dir for s in spec.sources if s.data_dir is not None],
    )
    return mixture, decision
