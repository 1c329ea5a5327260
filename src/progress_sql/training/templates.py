"""Schema-derived question/SQL templates over SQLite databases, and the splits of the default run.

A from-scratch model cannot learn English from the ~50 real questions a Spider database has, so the
``train`` command teaches it with questions generated from the schema alone: table and column names
(PRAGMA ``table_info`` / ``foreign_key_list``) and values sampled from the database, opened read-only.
Eleven families (:data:`FAMILIES`), two or three English paraphrases each, written in Spider's SQL
style (upper-case keywords, lower-case identifiers, ``a , b`` projections, ``T1`` / ``T2`` aliases).
Every generated SQL is run through the safe executor and kept only when it runs without error and
returns at least one row (an empty result would let a wrong prediction "match" it).

Splits (:func:`build_dataset`):

* ``heldout_new_combo``: a fifth of the *combinations* (family, table, columns) of each family, held
  out entirely: no training pair has that combination.
* ``heldout_new_value``: pairs whose combination is seen in training but whose SQL (value, operator,
  sort direction or aggregate) never is; all paraphrases of such a SQL are held out together.
* ``train``: the remaining pairs, **balanced across families**: each family contributes the same
  number of training pairs (``per_family``), sampled round-robin over its combinations when it has
  more, and repeated (whole passes in a fixed shuffled order) when its schema offers fewer distinct
  pairs (e.g. ``count`` has one SQL per table). :meth:`TemplateDataset.family_counts` reports both.
* ``real_train`` / ``real_test``: the real questions split 60/40 by normalized SQL, so paraphrase
  pairs of one query never straddle the split.

The family of a template example is recorded in ``Example.difficulty`` (e.g. ``"fk_join"``), so the
evaluation harness's difficulty breakdown gives a per-family breakdown; real examples keep theirs.

>>> from progress_sql.data.embedded import embedded_databases
>>> data = build_dataset(embedded_databases(), seed=0)
>>> sorted({example.difficulty for example in data.train}) == sorted(FAMILIES)
True
>>> len(data.heldout_new_combo), len(data.heldout_new_value)
(150, 150)
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from progress_sql.data.schema import connect_readonly, table_names
from progress_sql.execution.executor import ExecLimits, Executor
from progress_sql.types import Example, SQLValue

ColumnKind = Literal["number", "text"]
_LIMITS = ExecLimits(timeout_s=2.0, max_rows=10_000)
_MAX_VALUES = 40
_MAX_VALUE_CHARS = 40
_PLAIN_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*\Z")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_INTEGER_TEXT = re.compile(r"-?\d+\Z")


# --------------------------------------------------------------------------------------------------
# Schema with sampled values
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its kind (from the sampled values), whether it is a key, its distinct values."""

    table: str
    name: str
    kind: ColumnKind
    key: bool
    values: tuple[SQLValue, ...]
    distinct: int

    @property
    def sql(self) -> str:
        return identifier(self.name)

    @property
    def words(self) -> str:
        return words(self.name)


@dataclass(frozen=True, slots=True)
class ForeignKey:
    """``table.column`` references ``ref_table.ref_column``."""

    table: str
    column: str
    ref_table: str
    ref_column: str


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    rows: int
    foreign_keys: tuple[ForeignKey, ...]

    @property
    def sql(self) -> str:
        return identifier(self.name)

    @property
    def link(self) -> bool:
        """A pure link table (every column is a key), such as ``singer_in_concert``."""
        return all(column.key for column in self.columns)

    @property
    def plural(self) -> str:
        base = words(self.name)
        if self.link:
            return f"{base} records"
        return base if base.endswith("s") and not base.endswith("ss") else base + "s"

    @property
    def singular(self) -> str:
        base = words(self.name)
        if self.link:
            return f"{base} record"
        return base[:-1] if base.endswith("s") and not base.endswith("ss") else base

    def values(self, kind: ColumnKind | None = None) -> list[Column]:
        """Non-key columns (of ``kind``), the ones questions filter, sort and aggregate on."""
        return [c for c in self.columns if not c.key and (kind is None or c.kind == kind)]

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name.lower() == name.lower())


@dataclass(frozen=True, slots=True)
class Database:
    db_id: str
    path: Path
    tables: tuple[Table, ...]

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name.lower() == name.lower())


def words(name: str) -> str:
    """An identifier as lower-case English words: ``Song_release_year`` -> ``song release year``.

    >>> words("Song_release_year"), words("PetType"), words("StuID")
    ('song release year', 'pet type', 'stu id')
    """
    return " ".join(_CAMEL.sub(" ", name).replace("_", " ").lower().split())


def identifier(name: str) -> str:
    """``name`` as Spider writes it: lower case, double-quoted only when it must be."""
    lowered = name.lower()
    return lowered if _PLAIN_IDENTIFIER.match(lowered) else '"' + lowered.replace('"', '""') + '"'


def literal(value: SQLValue) -> str:
    """A SQL literal: numbers (and integer text, such as years) bare, text single-quoted."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) and not value.is_integer() else str(int(value))
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    if _INTEGER_TEXT.match(text):
        return text
    return "'" + text.replace("'", "''") + "'"


def spoken(value: SQLValue) -> str:
    """A value as a question states it: numbers bare, text in single quotes, as in the SQL, so that
    the value's tokens in the question and in the answer are the same (a small from-scratch model
    copies a quoted value; it cannot learn to map ``ĠPark`` to ``Park`` for values it never saw).

    >>> spoken("Stark's Park"), spoken(2014)
    ("'Stark's Park'", '2014')
    """
    text = literal(value)
    return "'" + text[1:-1].replace("''", "'") + "'" if text.startswith("'") else text


def _kind(values: Sequence[SQLValue]) -> ColumnKind:
    numeric = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    integer_text = [v for v in values if isinstance(v, str) and _INTEGER_TEXT.match(v)]
    return "number" if values and len(numeric) + len(integer_text) == len(values) else "text"


def read_database(db_id: str, path: str | Path) -> Database:
    """Tables, columns, foreign keys and sampled distinct values of a SQLite file, opened read-only."""
    db_path = Path(path)
    connection = connect_readonly(db_path)
    try:
        connection.execute("PRAGMA query_only = ON")
        names = table_names(connection)
        foreign: dict[str, list[ForeignKey]] = defaultdict(list)
        referenced: set[tuple[str, str]] = set()
        for name in names:
            for row in connection.execute("SELECT * FROM pragma_foreign_key_list(?)", (name,)):
                ref_table, column, ref_column = str(row[2]), str(row[3]), str(row[4])
                ref_table = next((n for n in names if n.lower() == ref_table.lower()), ref_table)
                foreign[name].append(ForeignKey(name, column, ref_table, ref_column))
                referenced.add((ref_table.lower(), ref_column.lower()))
        tables = []
        for name in names:
            quoted = '"' + name.replace('"', '""') + '"'
            rows = int(connection.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0])
            fk_columns = {fk.column.lower() for fk in foreign[name]}
            columns = []
            for info in connection.execute("SELECT name, pk FROM pragma_table_info(?)", (name,)).fetchall():
                column, pk = str(info[0]), bool(info[1])
                qcol = '"' + column.replace('"', '""') + '"'
                sample = tuple(
                    row[0]
                    for row in connection.execute(
                        f"SELECT DISTINCT {qcol} FROM {quoted} WHERE {qcol} IS NOT NULL ORDER BY 1 LIMIT {_MAX_VALUES}"
                    )
                )
                distinct = int(connection.execute(f"SELECT count(DISTINCT {qcol}) FROM {quoted}").fetchone()[0])
                key = pk or column.lower() in fk_columns or (name.lower(), column.lower()) in referenced
                columns.append(Column(name, column, _kind(sample), key, sample, distinct))
            tables.append(Table(name, tuple(columns), rows, tuple(foreign[name])))
    finally:
        connection.close()
    return Database(db_id, db_path, tuple(tables))


# --------------------------------------------------------------------------------------------------
# Families: each yields drafts (combination, variant, SQL, paraphrases)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Draft:
    """One template SQL with its paraphrases. ``combo`` is (table, columns...): what a
    ``heldout_new_combo`` item has never been seen with; the SQL's value, operator, direction or
    aggregate vary within a combination."""

    combo: tuple[str, ...]
    sql: str
    questions: tuple[str, ...]


Family = Callable[[Database], Iterator[Draft]]
_AGGREGATES = (("avg", "average"), ("max", "maximum"), ("min", "minimum"), ("sum", "total"))
_HIGH_LOW = {"DESC": ("highest", "largest", "most"), "ASC": ("lowest", "smallest", "least")}


def _thresholds(column: Column, op: str) -> list[SQLValue]:
    """Thresholds that leave a non-empty result: never the maximum for ``>`` nor the minimum for ``<``."""
    values = sorted(column.values, key=lambda v: float(v) if isinstance(v, (int, float, str)) else 0.0)
    return values[:-1] if op == ">" else values[1:]


def _texts(column: Column) -> list[SQLValue]:
    return [v for v in column.values if isinstance(v, str) and 0 < len(v) <= _MAX_VALUE_CHARS and v.strip() == v]


def _projections(table: Table) -> list[Column]:
    return [c for c in table.columns if not c.key] or list(table.columns)


def _count(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        yield Draft(
            (t.name,),
            f"SELECT count(*) FROM {t.sql}",
            (
                f"How many {t.plural} are there?",
                f"Count the number of {t.plural}.",
                f"What is the total number of {t.plural}?",
            ),
        )


def _list(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        columns = list(t.columns)
        for c in columns:
            yield Draft(
                (t.name, c.name),
                f"SELECT {c.sql} FROM {t.sql}",
                (f"List the {c.words} of all {t.plural}.", f"What is the {c.words} of every {t.singular}?"),
            )
        for i, a in enumerate(columns):
            for b in columns[i + 1 :]:
                yield Draft(
                    (t.name, a.name, b.name),
                    f"SELECT {a.sql} , {b.sql} FROM {t.sql}",
                    (
                        f"List the {a.words} and {b.words} of all {t.plural}.",
                        f"Show the {a.words} and the {b.words} of every {t.singular}.",
                        f"What are the {a.words} and {b.words} of each {t.singular}?",
                    ),
                )


def _groupable(table: Table) -> list[Column]:
    return [c for c in table.values() if 1 < c.distinct < table.rows]


def _distinct(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        for c in _groupable(t):
            yield Draft(
                (t.name, c.name, "list"),
                f"SELECT DISTINCT {c.sql} FROM {t.sql}",
                (
                    f"What are the distinct {c.words} values of the {t.plural}?",
                    f"List the different {c.words} of all {t.plural}.",
                    f"Show each distinct {c.words} among the {t.plural}.",
                ),
            )
            yield Draft(
                (t.name, c.name, "count"),
                f"SELECT count(DISTINCT {c.sql}) FROM {t.sql}",
                (
                    f"How many different {c.words} values do the {t.plural} have?",
                    f"Count the distinct {c.words} of the {t.plural}.",
                    f"Find the number of distinct {c.words} among all {t.plural}.",
                ),
            )


def _group_count(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        for c in _groupable(t):
            yield Draft(
                (t.name, c.name),
                f"SELECT {c.sql} , count(*) FROM {t.sql} GROUP BY {c.sql}",
                (
                    f"How many {t.plural} are there for each {c.words}?",
                    f"Show each {c.words} and the number of {t.plural} with it.",
                    f"For each {c.words}, count the {t.plural}.",
                ),
            )


def _agg(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        for c in t.values("number"):
            for fn, word in _AGGREGATES:
                yield Draft(
                    (t.name, c.name),
                    f"SELECT {fn}({c.sql}) FROM {t.sql}",
                    (
                        f"What is the {word} {c.words} of all {t.plural}?",
                        f"Find the {word} {c.words} among the {t.plural}.",
                        f"Give the {word} {c.words} over all {t.plural}.",
                    ),
                )


_COMPARE = {">": ("greater than", "above", "more than"), "<": ("less than", "below", "smaller than")}


def _count_where(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        for c in t.values("number"):
            for op, (w1, w2, w3) in _COMPARE.items():
                for v in _thresholds(c, op):
                    yield Draft(
                        (t.name, c.name),
                        f"SELECT count(*) FROM {t.sql} WHERE {c.sql} {op} {literal(v)}",
                        (
                            f"How many {t.plural} have a {c.words} {w1} {spoken(v)}?",
                            f"Count the {t.plural} whose {c.words} is {w2} {spoken(v)}.",
                            f"Find the number of {t.plural} with {c.words} {w3} {spoken(v)}.",
                        ),
                    )


def _filter_number(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        for c in t.values("number"):
            for p in _projections(t):
                if p == c:
                    continue
                for op, (w1, w2, w3) in _COMPARE.items():
                    for v in _thresholds(c, op):
                        yield Draft(
                            (t.name, p.name, c.name),
                            f"SELECT {p.sql} FROM {t.sql} WHERE {c.sql} {op} {literal(v)}",
                            (
                                f"What is the {p.words} of the {t.plural} whose {c.words} is {w1} {spoken(v)}?",
                                f"List the {p.words} of {t.plural} with {c.words} {w2} {spoken(v)}.",
                                f"Show the {p.words} for all {t.plural} that have {c.words} {w3} {spoken(v)}.",
                            ),
                        )


def _filter_text(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        for c in t.values("text"):
            for p in _projections(t):
                if p == c:
                    continue
                for v in _texts(c):
                    yield Draft(
                        (t.name, p.name, c.name),
                        f"SELECT {p.sql} FROM {t.sql} WHERE {c.sql} = {literal(v)}",
                        (
                            f"What is the {p.words} of the {t.singular} whose {c.words} is {spoken(v)}?",
                            f"Show the {p.words} of {t.plural} with {c.words} {spoken(v)}.",
                            f"Find the {p.words} of all {t.plural} where {c.words} equals {spoken(v)}.",
                        ),
                    )


def _top1(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        for c in t.values("number"):
            for p in _projections(t):
                if p == c:
                    continue
                for direction, (w1, w2, w3) in _HIGH_LOW.items():
                    order = f"{c.sql} DESC" if direction == "DESC" else c.sql
                    yield Draft(
                        (t.name, p.name, c.name),
                        f"SELECT {p.sql} FROM {t.sql} ORDER BY {order} LIMIT 1",
                        (
                            f"What is the {p.words} of the {t.singular} with the {w1} {c.words}?",
                            f"Which {t.singular} has the {w2} {c.words}? Give its {p.words}.",
                            f"Show the {p.words} of the {t.singular} with the {w3} {c.words}.",
                        ),
                    )


def _order_by(db: Database) -> Iterator[Draft]:
    for t in db.tables:
        for c in t.values("number"):
            for p in _projections(t):
                if p == c:
                    continue
                yield Draft(
                    (t.name, p.name, c.name),
                    f"SELECT {p.sql} FROM {t.sql} ORDER BY {c.sql} DESC",
                    (
                        f"List the {p.words} of all {t.plural} ordered by {c.words} from highest to lowest.",
                        f"Show the {p.words} of the {t.plural} in descending order of {c.words}.",
                    ),
                )
                yield Draft(
                    (t.name, p.name, c.name),
                    f"SELECT {p.sql} FROM {t.sql} ORDER BY {c.sql} ASC",
                    (
                        f"List the {p.words} of all {t.plural} ordered by {c.words} from lowest to highest.",
                        f"Show the {p.words} of the {t.plural} in ascending order of {c.words}.",
                    ),
                )


def _join(child: Table, fk: ForeignKey) -> str:
    return (
        f"FROM {child.sql} AS T1 JOIN {identifier(fk.ref_table)} AS T2 "
        f"ON T1.{identifier(fk.column)} = T2.{identifier(fk.ref_column)}"
    )


def _fk_join(db: Database) -> Iterator[Draft]:
    """Joins along each foreign key: the parent's attribute per child row, a count per parent, a
    child attribute filtered on a parent value; through link tables, both parents joined."""
    for child in db.tables:
        for fk in child.foreign_keys:
            parent = db.table(fk.ref_table)
            join = _join(child, fk)
            for p in parent.values():
                if not child.link:
                    for c in child.values():
                        yield Draft(
                            (child.name, parent.name, c.name, p.name, "pair"),
                            f"SELECT T1.{c.sql} , T2.{p.sql} {join}",
                            (
                                f"Show the {c.words} of each {child.singular} and the {p.words} of its "
                                f"{parent.singular}.",
                                f"For every {child.singular}, list its {c.words} and the {p.words} of the "
                                f"{parent.singular}.",
                            ),
                        )
                yield Draft(
                    (child.name, parent.name, p.name, "count"),
                    f"SELECT T2.{p.sql} , count(*) {join} GROUP BY T1.{identifier(fk.column)}",
                    (
                        f"For each {parent.singular}, show its {p.words} and the number of {child.plural}.",
                        f"How many {child.plural} does each {parent.singular} have? List the {p.words} too.",
                        f"Show the {p.words} of every {parent.singular} with its count of {child.plural}.",
                    ),
                )
                if child.link:
                    continue
                for c in child.values():
                    for v in _texts(p)[:12]:
                        yield Draft(
                            (child.name, parent.name, c.name, p.name, "filter"),
                            f"SELECT T1.{c.sql} {join} WHERE T2.{p.sql} = {literal(v)}",
                            (
                                f"What is the {c.words} of the {child.plural} whose {parent.singular} has "
                                f"{p.words} {spoken(v)}?",
                                f"List the {c.words} of {child.plural} of the {parent.singular} with "
                                f"{p.words} {spoken(v)}.",
                            ),
                        )
        if child.link and len(child.foreign_keys) == 2:
            yield from _through_link(db, child)


def _through_link(db: Database, link: Table) -> Iterator[Draft]:
    for first, second in (link.foreign_keys, link.foreign_keys[::-1]):
        a, b = db.table(first.ref_table), db.table(second.ref_table)
        join = (
            f"FROM {a.sql} AS T1 JOIN {link.sql} AS T2 ON T1.{identifier(first.ref_column)} = "
            f"T2.{identifier(first.column)} JOIN {b.sql} AS T3 ON T2.{identifier(second.column)} = "
            f"T3.{identifier(second.ref_column)}"
        )
        for p in a.values():
            for c in b.values("text"):
                for v in _texts(c)[:12]:
                    yield Draft(
                        (link.name, a.name, b.name, p.name, c.name),
                        f"SELECT T1.{p.sql} {join} WHERE T3.{c.sql} = {literal(v)}",
                        (
                            f"What is the {p.words} of the {a.plural} linked to {b.plural} whose {c.words} is "
                            f"{spoken(v)}?",
                            f"List the {p.words} of {a.plural} with a {b.singular} of {c.words} {spoken(v)}.",
                        ),
                    )


#: The template families, in a fixed order (name -> generator).
FAMILIES: Mapping[str, Family] = {
    "count": _count,
    "list": _list,
    "distinct": _distinct,
    "group_count": _group_count,
    "agg": _agg,
    "count_where": _count_where,
    "filter_number": _filter_number,
    "filter_text": _filter_text,
    "top1": _top1,
    "order_by": _order_by,
    "fk_join": _fk_join,
}


# --------------------------------------------------------------------------------------------------
# Pairs, splits and the dataset
# --------------------------------------------------------------------------------------------------


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
            db = read_database(db_id, databases[db_id])
            for family, generate in FAMILIES.items():
                seen: set[str] = set()
                for draft in generate(db):
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


def normalize_sql(sql: str) -> str:
    """A comparison key for SQL text: case, whitespace, quotes and a trailing semicolon folded.

    >>> normalize_sql('SELECT name ,  age FROM singer WHERE x = "a";')
    "select name,age from singer where x = 'a'"
    """
    text = " ".join(sql.strip().rstrip(";").replace('"', "'").lower().split())
    return re.sub(r"\s*([,()])\s*", r"\1", text)


def split_real(real: Sequence[Example], seed: int = 0, train_share: float = 0.6) -> tuple[list[Example], list[Example]]:
    """Real questions split by normalized SQL (all paraphrases of a query land on the same side)."""
    keys = sorted({normalize_sql(example.gold_sql) for example in real})
    random.Random(seed).shuffle(keys)
    train_keys = set(keys[: round(len(keys) * train_share)])
    train = [e for e in real if normalize_sql(e.gold_sql) in train_keys]
    test = [e for e in real if normalize_sql(e.gold_sql) not in train_keys]
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
        members = families.get(family, [])
        combos = sorted({pair.combo for pair in members})
        rng.shuffle(combos)
        held_combos = set(combos[: int(len(combos) * combo_holdout)]) if len(combos) > 1 else set()
        new_combo.extend(pair for pair in members if pair.combo in held_combos)
        seen = [pair for pair in members if pair.combo not in held_combos]
        # Within each seen combination with several SQL, hold out a share of the SQL (never all).
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
        new_value_candidates.extend(pair for pair in seen if (pair.combo, pair.sql) in held_sql)
        train_pool[family] = [pair for pair in seen if (pair.combo, pair.sql) not in held_sql]

    train_pairs: list[TemplatePair] = []
    for family in FAMILIES:
        pool = train_pool[family]
        if not pool:
            continue
        groups: dict[tuple[str, ...], list[TemplatePair]] = defaultdict(list)
        for pair in pool:
            groups[pair.combo].append(pair)
        chosen = _round_robin(groups, rng, per_family)
        distinct = list(chosen)
        while len(chosen) < per_family:  # repeat passes of a family with few distinct pairs
            chosen.extend(rng.sample(distinct, min(len(distinct), per_family - len(chosen))))
        train_pairs.extend(chosen)
    rng.shuffle(train_pairs)

    trained_combos = {pair.combo for pair in train_pairs}
    trained_sql = {(pair.db_id, pair.sql) for pair in train_pairs}
    new_value = [
        pair
        for pair in new_value_candidates
        if pair.combo in trained_combos and (pair.db_id, pair.sql) not in trained_sql
    ]
    if real is None:
        from progress_sql.data.embedded import real_questions

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


__all__ = [
    "FAMILIES",
    "Column",
    "Database",
    "Draft",
    "ForeignKey",
    "Table",
    "TemplateDataset",
    "TemplatePair",
    "build_dataset",
    "generate_pairs",
    "normalize_sql",
    "read_database",
    "split_real",
]
