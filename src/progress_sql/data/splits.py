"""Schema-disjoint splits: cut examples into train / validation / test by database, so that no
database (and, grouped by :mod:`~progress_sql.data.fingerprint`, no schema) appears in two splits
(seed 002, point 8: hold out schemas, not just questions). :func:`split_by_database` is pure; the
command is ``progress-sql split`` (docs/training.md#a-clean-rl-set).

>>> from progress_sql.types import Example
>>> examples = [Example(i, f"q{i}", f"db{i % 5}", f"/d/db{i % 5}.sqlite", "SELECT 1") for i in range(50)]
>>> plan = split_by_database(examples, {"train": 0.6, "validation": 0.2, "test": 0.2}, seed=0)
>>> [(s.name, s.examples, len(s.databases)) for s in plan.splits]
[('train', 30, 3), ('validation', 10, 1), ('test', 10, 1)]
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from progress_sql.errors import ConfigError
from progress_sql.types import Example

#: How databases are grouped before the cut: each database alone, or every database with the same
#: schema fingerprint together (absent databases, which have no fingerprint, stay alone).
GroupBy = Literal["database", "fingerprint"]
GROUP_BY: tuple[GroupBy, ...] = ("database", "fingerprint")

#: The usual split names and target fractions by examples.
DEFAULT_FRACTIONS: dict[str, float] = {"train": 0.8, "validation": 0.1, "test": 0.1}


@dataclass(frozen=True, slots=True)
class SplitGroup:
    """Databases that must land in one split, and how many examples they hold."""

    key: str
    databases: tuple[str, ...]
    examples: int


@dataclass(frozen=True, slots=True)
class SplitPart:
    """One split: its target fraction, what it got, and which databases and groups it holds."""

    name: str
    target: float
    examples: int
    share: float
    databases: tuple[str, ...]
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SplitPlan:
    """Where each database went (``assignment``: db_id -> split name), per split the totals, and
    the settings that reproduce it."""

    splits: tuple[SplitPart, ...]
    assignment: Mapping[str, str]
    groups: tuple[SplitGroup, ...]
    group_by: GroupBy
    seed: int

    def split_of(self, example: Example) -> str:
        return self.assignment[example.db_id]


def parse_fractions(text: str) -> dict[str, float]:
    """``train=0.8,validation=0.1,test=0.1`` -> fractions (normalised to sum to 1).

    >>> parse_fractions("train=8,test=2")
    {'train': 0.8, 'test': 0.2}
    """
    fractions: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, value = part.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not sep or not name.strip() or not number >= 0:
            raise ConfigError(f"a split is NAME=FRACTION (a number >= 0), got {part!r} in {text!r}")
        if name.strip() in fractions:
            raise ConfigError(f"split {name.strip()!r} given twice in {text!r}")
        fractions[name.strip()] = number
    return _normalised(fractions)


def _normalised(fractions: Mapping[str, float]) -> dict[str, float]:
    whole = sum(fractions.values())
    if not fractions or not whole > 0:
        raise ConfigError("give at least one split with a fraction > 0")
    return {name: value / whole for name, value in fractions.items()}


def database_groups(
    examples: Sequence[Example], group_by: GroupBy = "fingerprint", fingerprints: Mapping[str, str] | None = None
) -> list[SplitGroup]:
    """The groups of databases that stay together, in first-seen order of their databases."""
    if group_by not in GROUP_BY:
        raise ConfigError(f"group_by must be one of {', '.join(GROUP_BY)}, got {group_by!r}")
    sizes = Counter(e.db_id for e in examples)
    prints = fingerprints or {}
    members: dict[str, list[str]] = {}
    for db_id in sizes:  # Counter keeps first-seen order
        key = f"schema:{prints[db_id]}" if group_by == "fingerprint" and db_id in prints else f"db:{db_id}"
        members.setdefault(key, []).append(db_id)
    return [SplitGroup(key, tuple(dbs), sum(sizes[d] for d in dbs)) for key, dbs in members.items()]


def split_by_database(
    examples: Sequence[Example],
    fractions: Mapping[str, float] | None = None,
    *,
    seed: int = 0,
    group_by: GroupBy = "fingerprint",
    fingerprints: Mapping[str, str] | None = None,
) -> SplitPlan:
    """Assign whole groups of databases to splits so that each split's share of the examples comes
    near its target fraction; deterministic in ``seed`` (and independent of the examples' order).

    The groups are shuffled with the seed and dealt out one at a time, each to the split furthest
    below its target (in examples), the first split on ties; a split with a positive target gets a
    group before any split gets a second, while there are groups to give."""
    targets = _normalised(fractions or DEFAULT_FRACTIONS)
    ordered = sorted(examples, key=lambda e: (e.db_id, e.index))  # the input's order must not matter
    groups = sorted(database_groups(ordered, group_by, fingerprints), key=lambda g: g.key)
    random.Random(seed).shuffle(groups)
    total = sum(g.examples for g in groups)
    got: dict[str, list[SplitGroup]] = {name: [] for name in targets}
    counts = dict.fromkeys(targets, 0)
    for group in groups:
        empty = [n for n in targets if targets[n] > 0 and not got[n]]
        names = empty or list(targets)
        name = max(names, key=lambda n: (targets[n] * total - counts[n], -list(targets).index(n)))
        got[name].append(group)
        counts[name] += group.examples
    assignment = {db: name for name, gs in got.items() for g in gs for db in g.databases}
    parts = tuple(
        SplitPart(
            name=name,
            target=round(targets[name], 6),
            examples=counts[name],
            share=round(counts[name] / total, 6) if total else 0.0,
            databases=tuple(sorted(db for g in got[name] for db in g.databases)),
            groups=tuple(sorted(g.key for g in got[name])),
        )
        for name in targets
    )
    return SplitPlan(parts, assignment, tuple(groups), group_by, seed)
