"""A synthetic dataset at any scale, for the cluster's tests and benchmarks: many small generated SQLite
databases, each with generated question / SQL pairs and a prediction per question, in Spider's release
layout (``questions.json``, ``database/<db_id>/<db_id>.sqlite``, ``predictions.sql``), so that every
command reads it as a Spider-format questions file. The same seed gives the same bytes.

A share of the golds is flawed on purpose (a LIMIT without ORDER BY, a filter that matches nothing), so
the audit's checks and filters have something to find; the predictions mix the gold, the gold written
otherwise, wrong answers and SQL that fails, so evaluation has every verdict to give.

Command line: ``python -m progress_sql.cluster.synthetic OUT --databases 500 --seed 0``.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from progress_sql.errors import ConfigError

QUESTIONS_FILE = "questions.json"
DATABASES_FOLDER = "database"
PREDICTIONS_FILE = "predictions.sql"

#: (singular, plural) of the main table's entity; its owner table; their numeric and category columns.
ENTITIES = (("book", "books"), ("song", "songs"), ("car", "cars"), ("film", "films"), ("player", "players"),
            ("ship", "ships"), ("product", "products"), ("course", "courses"), ("painting", "paintings"))  # fmt: skip
OWNERS = (("author", "authors"), ("artist", "artists"), ("maker", "makers"), ("studio", "studios"),
          ("team", "teams"), ("company", "companies"), ("store", "stores"), ("school", "schools"))  # fmt: skip
NUMBERS = ("price", "rating", "year", "weight", "length", "score", "stock", "points")
CATEGORIES = ("genre", "category", "kind", "style", "grade", "region")
CATEGORY_VALUES = ("alpha", "beta", "gamma", "delta", "omega", "north", "south", "east", "west", "prime")
CITIES = ("Paris", "Lima", "Oslo", "Cairo", "Quito", "Seoul", "Perth", "Dakar", "Porto", "Hanoi")
SYLLABLES = ("ka", "lo", "mi", "ra", "ten", "su", "vo", "di", "an", "el", "or", "ba", "ne", "qu", "zi")


@dataclass(frozen=True, slots=True)
class SyntheticConfig:
    """How much to generate. ``flawed_share``: the share of golds flawed on purpose."""

    databases: int = 500
    questions_per_database: int = 2
    seed: int = 0
    flawed_share: float = 0.1

    def __post_init__(self) -> None:
        if self.databases < 1 or self.questions_per_database < 1:
            raise ConfigError("a synthetic dataset needs >= 1 database and >= 1 question per database")
        if not 0 <= self.flawed_share <= 1:
            raise ConfigError(f"flawed_share must be within [0, 1], got {self.flawed_share}")


@dataclass(frozen=True, slots=True)
class SyntheticDataset:
    """Where a generated dataset lies; ``questions`` is what ``--task`` takes."""

    root: Path
    questions: Path
    databases: Path
    predictions: Path
    examples: int
    database_count: int


@dataclass(frozen=True, slots=True)
class _Schema:
    """One generated database's names: the entity table, its owner table and their columns."""

    entity: tuple[str, str]
    owner: tuple[str, str]
    numbers: tuple[str, str]
    category: str


@dataclass(frozen=True, slots=True)
class _Pair:
    question: str
    sql: str
    wrong: str  # a plausible wrong answer (for the predictions)


def db_id_of(k: int) -> str:
    """The id of the ``k``-th database (``syn_00042``)."""
    return f"syn_{k:05d}"


def generate_dataset(out: str | Path, config: SyntheticConfig = SyntheticConfig()) -> SyntheticDataset:
    """Write the dataset under ``out`` (existing generated files are replaced) and say where it lies."""
    root = Path(out)
    databases = root / DATABASES_FOLDER
    rows: list[dict[str, str]] = []
    predictions: list[str] = []
    for k in range(config.databases):
        rng = random.Random(f"{config.seed}:{k}")
        db_id = db_id_of(k)
        schema, values = _write_database(databases / db_id / f"{db_id}.sqlite", rng)
        for _ in range(config.questions_per_database):
            pair = _pair(schema, values, rng, flawed=rng.random() < config.flawed_share)
            rows.append({"db_id": db_id, "question": pair.question, "query": pair.sql})
            predictions.append(_prediction(pair, rng))
    questions = root / QUESTIONS_FILE
    questions.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    predicted = root / PREDICTIONS_FILE
    predicted.write_text("".join(f"{sql}\n" for sql in predictions), encoding="utf-8")
    return SyntheticDataset(root, questions, databases, predicted, len(rows), config.databases)


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def _write_database(path: Path, rng: random.Random) -> tuple[_Schema, dict[str, list[object]]]:
    """Create one database; return its names and, per column, the values it holds (for questions)."""
    numbers = rng.sample(NUMBERS, 2)
    schema = _Schema(rng.choice(ENTITIES), rng.choice(OWNERS), (numbers[0], numbers[1]), rng.choice(CATEGORIES))
    entity, owner = schema.entity[0], schema.owner[0]
    owners = [(i + 1, _name(rng), rng.choice(CITIES), rng.randint(1950, 2020)) for i in range(rng.randint(4, 10))]
    categories = rng.sample(CATEGORY_VALUES, rng.randint(3, 5))
    entities = [
        (i + 1, _name(rng), rng.choice(categories), rng.randint(1, 500), round(rng.uniform(0, 100), 1),
         rng.randint(1, len(owners)))
        for i in range(rng.randint(8, 30))
    ]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    connection = sqlite3.connect(path)
    try:
        # a fresh file nobody reads yet: no journal, no fsync (the bytes are the same, the writing ~20x faster)
        connection.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
        connection.executescript(
            f"CREATE TABLE {owner} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, founded INTEGER);\n"
            f"CREATE TABLE {entity} (id INTEGER PRIMARY KEY, name TEXT NOT NULL, {schema.category} TEXT, "
            f"{schema.numbers[0]} INTEGER, {schema.numbers[1]} REAL, "
            f"{owner}_id INTEGER REFERENCES {owner}(id));"
        )
        connection.executemany(f"INSERT INTO {owner} VALUES (?, ?, ?, ?)", owners)
        connection.executemany(f"INSERT INTO {entity} VALUES (?, ?, ?, ?, ?, ?)", entities)
        connection.commit()
    finally:
        connection.close()
    values: dict[str, list[object]] = {
        "category": [*sorted({e[2] for e in entities})],
        "number": [e[3] for e in entities],
        "city": [*sorted({o[2] for o in owners})],
    }
    return schema, values


Template = Callable[[_Schema, dict[str, list[object]], random.Random], _Pair]


def _count(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    t = s.entity[0]
    return _Pair(
        f"How many {s.entity[1]} are there?", f"SELECT count(*) FROM {t}", f"SELECT count(*) FROM {s.owner[0]}"
    )


def _filter(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    t, c = s.entity[0], s.numbers[0]
    value = rng.choice(v["number"])
    return _Pair(
        f"List the names of the {s.entity[1]} whose {c} is above {value}.",
        f"SELECT name FROM {t} WHERE {c} > {value}",
        f"SELECT name FROM {t} WHERE {c} >= {value}",
    )


def _group(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    t, g = s.entity[0], s.category
    return _Pair(
        f"How many {s.entity[1]} are there of each {g}?",
        f"SELECT {g} , count(*) FROM {t} GROUP BY {g}",
        f"SELECT {g} , count(DISTINCT {s.owner[0]}_id) FROM {t} GROUP BY {g}",
    )


def _top(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    t, c = s.entity[0], s.numbers[1]
    return _Pair(
        f"Which {s.entity[0]} has the highest {c}?",
        f"SELECT name FROM {t} ORDER BY {c} DESC LIMIT 1",
        f"SELECT name FROM {t} ORDER BY {c} ASC LIMIT 1",
    )


def _join(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    t, o = s.entity[0], s.owner[0]
    city = rng.choice(v["city"])
    return _Pair(
        f"What are the names of the {s.entity[1]} whose {o} is based in {city}?",
        f"SELECT T1.name FROM {t} AS T1 JOIN {o} AS T2 ON T1.{o}_id = T2.id WHERE T2.city = '{city}'",
        f"SELECT T2.name FROM {t} AS T1 JOIN {o} AS T2 ON T1.{o}_id = T2.id WHERE T2.city = '{city}'",
    )


def _average(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    t, c, g = s.entity[0], s.numbers[0], s.category
    value = rng.choice(v["category"])
    return _Pair(
        f"What is the average {c} of the {s.entity[1]} of {g} {value}?",
        f"SELECT avg({c}) FROM {t} WHERE {g} = '{value}'",
        f"SELECT max({c}) FROM {t} WHERE {g} = '{value}'",
    )


def _per_owner(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    t, o = s.entity[0], s.owner[0]
    return _Pair(
        f"For each {o}, give its name and how many {s.entity[1]} it has, most first.",
        f"SELECT T2.name , count(*) FROM {t} AS T1 JOIN {o} AS T2 ON T1.{o}_id = T2.id "
        f"GROUP BY T2.id ORDER BY count(*) DESC , T2.name",
        f"SELECT T2.name , count(*) FROM {t} AS T1 JOIN {o} AS T2 ON T1.{o}_id = T2.id GROUP BY T2.city",
    )


def _unordered_limit(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    """Flawed: three rows without an order (the audit's limit-no-order and order-dependence checks)."""
    t = s.entity[0]
    return _Pair(f"Name three {s.entity[1]}.", f"SELECT name FROM {t} LIMIT 3", f"SELECT name FROM {t} LIMIT 2")


def _nothing(s: _Schema, v: dict[str, list[object]], rng: random.Random) -> _Pair:
    """Flawed: a filter no row passes (the audit's empty-result check)."""
    t, c = s.entity[0], s.numbers[0]
    return _Pair(
        f"Which {s.entity[1]} have a {c} above 1000?",
        f"SELECT name FROM {t} WHERE {c} > 1000",
        f"SELECT name FROM {t} WHERE {c} > 100",
    )


SOUND: tuple[Template, ...] = (_count, _filter, _group, _top, _join, _average, _per_owner)
FLAWED: tuple[Template, ...] = (_unordered_limit, _nothing)


def _pair(schema: _Schema, values: dict[str, list[object]], rng: random.Random, *, flawed: bool) -> _Pair:
    return rng.choice(FLAWED if flawed else SOUND)(schema, values, rng)


def _prediction(pair: _Pair, rng: random.Random) -> str:
    """The gold (55%), the gold in lower case (15%), a wrong answer (20%) or SQL that fails (10%)."""
    draw = rng.random()
    if draw < 0.55:
        return pair.sql
    if draw < 0.70:
        return pair.sql.replace("SELECT", "select").replace(" FROM ", " from ")
    if draw < 0.90:
        return pair.wrong
    return pair.sql.replace("SELECT ", "SELECT missing_column , ", 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m progress_sql.cluster.synthetic", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    defaults = SyntheticConfig()
    parser.add_argument("out", type=Path, help="Folder to write (questions.json, database/, predictions.sql).")
    parser.add_argument("--databases", type=int, default=defaults.databases)
    parser.add_argument("--questions-per-database", type=int, default=defaults.questions_per_database)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--flawed-share", type=float, default=defaults.flawed_share)
    args = parser.parse_args(argv)
    try:
        config = SyntheticConfig(args.databases, args.questions_per_database, args.seed, args.flawed_share)
    except ConfigError as error:
        parser.error(str(error))
    dataset = generate_dataset(args.out, config)
    print(f"{dataset.examples} questions over {dataset.database_count} databases: --task {dataset.questions}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
