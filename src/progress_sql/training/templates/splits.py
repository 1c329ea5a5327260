"""Template pairs over databases and the splits of the default run (see the package docstring):
every executable pair, the held-out sets, the family-balanced training set and the real questions
split by SQL."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from progress_sql.data.embedded import real_questions
from progress_sql.data.introspect import DatabaseProfile, ValueSample, read_profile
from progress_sql.execution.executor import ExecLimits, Executor
from progress_sql.training.templates.families import FAMILIES
from progress_sql.types import Example

_LIMITS = ExecLimits(timeout_s=2.0, max_rows=10_000)
#: What the templates read of a column: its 40 smallest distinct values (questions quote them and
#: thresholds come from them) and its count of distinct values; and each table's row count.
TEMPLATE_SAMPLE = ValueSample(40, "distinct_sorted", count_distinct=True)


def read_template_database(path: str | Path) -> DatabaseProfile:
    """The profile the families walk (read-only)."""
    return read_profile(path, TEMPLATE_SAMPLE, row_counts=True)


@dataclass(frozen=True, slots=True)
class TemplatePair:
    """One generated (question, SQL) pair that executed with a non-empty result."""

    family: str
    db_id: str
    combo: tuple[str, ...]
    question: str
    sql: str


def generate_pairs(databases: Mapping[str, Path], executor: Executor | None = None) -> list[TemplatePair]:
    """Every executable template pair over ``databases`` (in a deterministic order). A question that
    two different SQL would answer is dropped (it is ambiguous)."""
    own = executor is None
    runner = executor or Executor(max_connections=4)
    pairs: list[TemplatePair] = []
    try:
        for db_id in sorted(databases):
            db = read_template_database(databases[db_id])
            for family, spec in FAMILIES.items():
                seen: set[str] = set()
                for draft in spec.drafts(db):
                    sql = " ".join(draft.sql.split())
                    if sql in seen:
                        continue
                    seen.add(sql)
                    result = runner.run(db.path, sql, _LIMITS)
                    if not result.ok or result.truncated or not result.rows:
                        continue
                    pairs.extend(
                        TemplatePair(family, db_id, (db_id, *draft.combo), " ".join(q.split()), sql)
                        for q in draft.questions
                    )
    finally:
        if own:
            runner.close()
    answers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for pair in pairs:
        answers[pair.db_id, pair.question].add(pair.sql)
    return [pair for pair in pairs if len(answers[pair.db_id, pair.question]) == 1]


def folded_sql(sql: str) -> str:
    """SQL text with case, whitespace, quote style and a trailing semicolon folded: the key under
    which paraphrases of one query meet (not :func:`progress_sql.judge.cache.normalize_sql`,
    which folds whitespace only).

    >>> folded_sql('SELECT name ,  age FROM singer WHERE x = "a";')
    "select name,age from singer where x = 'a'"
    """
    text = " ".join(sql.strip().rstrip(";").replace('"', "'").lower().split())
    return re.sub(r"\s*([,()])\s*", r"\1", text)


def split_real(real: Sequence[Example], seed: int = 0, train_share: float = 0.6) -> tuple[list[Example], list[Example]]:
    """Real questions split by normalized SQL (all paraphrases of a query land on the same side)."""
    keys = sorted({folded_sql(example.gold_sql) for example in real})
    random.Random(seed).shuffle(keys)
    train_keys = set(keys[: round(len(keys) * train_share)])
    train = [e for e in real if folded_sql(e.gold_sql) in train_keys]
    test = [e for e in real if folded_sql(e.gold_sql) not in train_keys]
    return train, test


@dataclass(frozen=True, slots=True)
class TemplateDataset:
    """The default run's data (see the module docstring). Template examples carry their family in
    ``Example.difficulty``; ``train`` repeats pairs of families with few distinct pairs (balance)."""

    train: list[Example]
    heldout_new_combo: list[Example]
    heldout_new_value: list[Example]
    real_train: list[Example]
    real_test: list[Example]
    #: Distinct template pairs available per family, before capping and splitting.
    available: Mapping[str, int] = field(default_factory=dict)

    def family_counts(self) -> dict[str, tuple[int, int]]:
        """``family -> (training examples, distinct training questions)``."""
        total: dict[str, int] = defaultdict(int)
        distinct: dict[str, set[tuple[str, str]]] = defaultdict(set)
        for example in self.train:
            family = example.difficulty or ""
            total[family] += 1
            distinct[family].add((example.db_id, example.question))
        return {family: (total[family], len(distinct[family])) for family in sorted(total)}


def _round_robin(
    groups: Mapping[tuple[str, ...], list[TemplatePair]], rng: random.Random, size: int
) -> list[TemplatePair]:
    """Up to ``size`` pairs, one per group in turn (groups and members shuffled), so that every
    group is represented before any gets a second pair."""
    queues = [rng.sample(members, len(members)) for _, members in sorted(groups.items())]
    rng.shuffle(queues)
    chosen: list[TemplatePair] = []
    while len(chosen) < size and any(queues):
        for queue in queues:
            if queue and len(chosen) < size:
                chosen.append(queue.pop())
    return chosen


def _balanced_sample(pairs: Sequence[TemplatePair], rng: random.Random, size: int) -> list[TemplatePair]:
    """``size`` held-out pairs spread evenly over families (round-robin), one paraphrase per SQL first."""
    by_family: dict[tuple[str, ...], list[TemplatePair]] = defaultdict(list)
    for pair in pairs:
        by_family[(pair.family,)].append(pair)
    per_sql: dict[tuple[str, ...], list[TemplatePair]] = {}
    for family, members in by_family.items():
        groups: dict[tuple[str, ...], list[TemplatePair]] = defaultdict(list)
        for pair in members:
            groups[(pair.db_id, pair.sql)].append(pair)
        per_sql[family] = _round_robin(groups, rng, len(members))
    return _round_robin(per_sql, rng, size)


def _hold_out(
    members: Sequence[TemplatePair], rng: random.Random, combo_holdout: float, value_holdout: float
) -> tuple[list[TemplatePair], list[TemplatePair], list[TemplatePair]]:
    """One family's pairs as (training pool, held-out combinations, held-out SQL candidates): a
    share of its combinations held out entirely, then, within each remaining combination with
    several SQL, a share of the SQL (never all)."""
    combos = sorted({pair.combo for pair in members})
    rng.shuffle(combos)
    held_combos = set(combos[: int(len(combos) * combo_holdout)]) if len(combos) > 1 else set()
    seen = [pair for pair in members if pair.combo not in held_combos]
    sqls_by_combo: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for pair in seen:
        if pair.sql not in sqls_by_combo[pair.combo]:
            sqls_by_combo[pair.combo].append(pair.sql)
    held_sql: set[tuple[tuple[str, ...], str]] = set()
    for combo, sqls in sorted(sqls_by_combo.items()):
        if len(sqls) > 1:
            ordered = sorted(sqls)
            rng.shuffle(ordered)
            count = min(len(ordered) - 1, max(1, int(len(ordered) * value_holdout)))
            held_sql.update((combo, sql) for sql in ordered[:count])
    return (
        [pair for pair in seen if (pair.combo, pair.sql) not in held_sql],
        [pair for pair in members if pair.combo in held_combos],
        [pair for pair in seen if (pair.combo, pair.sql) in held_sql],
    )


def _family_train(pool: Sequence[TemplatePair], rng: random.Random, size: int) -> list[TemplatePair]:
    """``size`` training pairs of one family: round-robin over its combinations, then whole passes
    repeated when it has fewer distinct pairs (none from an empty pool)."""
    if not pool:
        return []
    groups: dict[tuple[str, ...], list[TemplatePair]] = defaultdict(list)
    for pair in pool:
        groups[pair.combo].append(pair)
    chosen = _round_robin(groups, rng, size)
    distinct = list(chosen)
    while len(chosen) < size:
        chosen.extend(rng.sample(distinct, min(len(distinct), size - len(chosen))))
    return chosen


def build_dataset(
    databases: Mapping[str, Path],
    seed: int = 0,
    heldout_size: int = 150,
    *,
    real: Sequence[Example] | None = None,
    per_family: int = 250,
    combo_holdout: float = 0.2,
    value_holdout: float = 0.2,
) -> TemplateDataset:
    """Template pairs over ``databases`` split into train / held-out sets, plus ``real`` split by SQL.

    Deterministic for a seed. ``per_family`` is the number of training examples each family
    contributes (sampled round-robin over combinations, or repeated when the family has fewer
    distinct pairs). ``real`` defaults to the embedded real questions of the databases given (their
    ``db_path`` pointed at ``databases``).
    """
    rng = random.Random(seed)
    pairs = generate_pairs(databases)
    families: dict[str, list[TemplatePair]] = defaultdict(list)
    for pair in pairs:
        families[pair.family].append(pair)

    train_pool: dict[str, list[TemplatePair]] = {}
    new_combo: list[TemplatePair] = []
    new_value_candidates: list[TemplatePair] = []
    for family in FAMILIES:
        seen, held_combo, held_value = _hold_out(families.get(family, []), rng, combo_holdout, value_holdout)
        train_pool[family] = seen
        new_combo.extend(held_combo)
        new_value_candidates.extend(held_value)
    train_pairs = [pair for family in FAMILIES for pair in _family_train(train_pool[family], rng, per_family)]
    rng.shuffle(train_pairs)

    trained_combos = {pair.combo for pair in train_pairs}
    trained_sql = {(pair.db_id, pair.sql) for pair in train_pairs}
    new_value = [
        pair
        for pair in new_value_candidates
        if pair.combo in trained_combos and (pair.db_id, pair.sql) not in trained_sql
    ]
    if real is None:
        real = [
            replace(example, db_path=str(databases[example.db_id]))
            for example in real_questions()
            if example.db_id in databases
        ]
    real_train, real_test = split_real(real, seed)
    index = {id(pair): number for number, pair in enumerate(pairs)}

    def examples(chosen: Sequence[TemplatePair]) -> list[Example]:
        return [
            Example(
                index=index[id(pair)],
                question=pair.question,
                db_id=pair.db_id,
                db_path=str(databases[pair.db_id]),
                gold_sql=pair.sql,
                difficulty=pair.family,
            )
            for pair in chosen
        ]

    return TemplateDataset(
        train=examples(train_pairs),
        heldout_new_combo=examples(_balanced_sample(new_combo, rng, heldout_size)),
        heldout_new_value=examples(_balanced_sample(new_value, rng, heldout_size)),
        real_train=real_train,
        real_test=real_test,
        available={family: len(families.get(family, [])) for family in FAMILIES},
    )
