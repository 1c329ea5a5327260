"""Random databases with the original schema (test-suite accuracy, Zhong, Yu and Klein 2020), the same
bytes for the same profile, constants and seed; how: docs/testsuite.md#how-a-suite-is-built, step 2."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from progress_sql.data.introspect import ColumnInfo, DatabaseProfile, ForeignKey, TableInfo, quote_identifier
from progress_sql.testsuite.hints import Constants
from progress_sql.testsuite.profile import resolve_parent_columns, table_order
from progress_sql.testsuite.values import GENERATORS, ColumnGenerator, near_misses
from progress_sql.types import SQLValue

#: Original values per column pool, and the largest table a fuzzed database gets.
POOL_ORIGINALS = 5
MAX_ROWS = 300
#: Chance of a fresh value in a single-column key (a pool value would mostly repeat an earlier row).
KEY_FRESH_P = 0.7


@dataclass(frozen=True, slots=True)
class FuzzReport:
    """What one fuzzed database got: rows per table, foreign keys exempted (table -> why) and how
    many rows were removed because they pointed at no parent row."""

    path: str
    rows: Mapping[str, int]
    invalid_foreign_keys: Mapping[str, str]
    dangling_removed: int


def _depths(profile: DatabaseProfile, order: list[TableInfo]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for table in order:
        parents = [depth.get(fk.parent.lower(), 0) + 1 for fk in table.foreign_keys if fk.parent.lower() in depth]
        depth[table.name.lower()] = max(parents, default=0)
    return depth


def _generator(
    table: TableInfo, column: ColumnInfo, constants: Constants, fresh_p: float, rng: random.Random
) -> ColumnGenerator:
    key = (table.name.lower(), column.name.lower())
    pool: list[SQLValue] = rng.choices(column.values, k=POOL_ORIGINALS) if column.values else []
    for constant in constants.get(key, ()):
        pool.extend(near_misses(constant, column.kind))
    kept = [v for v in pool if rng.random() >= 0.1] or pool[:1]
    not_null = column.notnull or column.name in table.primary_key
    if not_null:
        kept = [v for v in kept if v is not None]
    single_key = table.primary_key == (column.name,) or (column.name,) in table.uniques
    cap = None if single_key or rng.random() < 0.5 else rng.randint(1, 30)
    # A key column mostly gets fresh values: drawn from a pool of a few, most rows would collide.
    chance = KEY_FRESH_P if single_key else fresh_p
    generator = ColumnGenerator(column.kind, kept, 0.0 if not kept else chance, cap, column.date_format)
    if single_key:  # every pool value (constants included) once, in random order, before fresh ones
        generator.queue = list(dict.fromkeys(kept))
        rng.shuffle(generator.queue)
    return generator


def _sample(generator: ColumnGenerator, not_null: bool, rng: random.Random) -> SQLValue:
    value = generator.sample(rng)
    if value is None and not_null:
        value = GENERATORS[generator.kind](generator, rng)
    return value


def _table_rows(
    profile: DatabaseProfile,
    table: TableInfo,
    size: int,
    generators: Mapping[str, ColumnGenerator],
    parents: Mapping[str, list[tuple[SQLValue, ...]]],
    rng: random.Random,
    joins: Sequence[ForeignKey] = (),
) -> list[list[SQLValue]]:
    names = [c.name for c in table.columns]
    position = {n.lower(): i for i, n in enumerate(names)}
    links: list[tuple[list[int], list[int], str]] = []  # (child positions, parent positions, parent)
    taken: set[int] = set()
    own = table.name.lower()
    # Declared foreign keys first; then the gold queries' join links whose parent is already filled.
    usable_joins = [j for j in joins if j.parent.lower() in parents or j.parent.lower() == own]
    for fk in (*table.foreign_keys, *usable_joins):
        parent_columns = resolve_parent_columns(profile, fk)
        parent = profile.table(fk.parent)
        if parent_columns is None or parent is None:
            continue
        child_positions = [position.get(c.lower(), -1) for c in fk.columns]
        parent_index = {c.name.lower(): i for i, c in enumerate(parent.columns)}
        parent_positions = [parent_index[c.lower()] for c in parent_columns]
        if -1 in child_positions or taken & set(child_positions):
            continue
        taken.update(child_positions)
        links.append((child_positions, parent_positions, parent.name.lower()))
    rows: list[list[SQLValue]] = []
    for _ in range(size):
        row = [
            None if i in taken else _sample(generators[c.name], c.notnull or c.name in table.primary_key, rng)
            for i, c in enumerate(table.columns)
        ]
        rows.append(row)
    for child_positions, parent_positions, parent_name in links:
        for row in rows:
            candidates = parents.get(parent_name, []) if parent_name != own else [tuple(r) for r in rows]
            nullable = all(not table.columns[i].notnull for i in child_positions)
            if candidates and not (nullable and rng.random() < 0.05):
                chosen = rng.choice(candidates)
                for i, j in zip(child_positions, parent_positions, strict=True):
                    row[i] = chosen[j]
            elif not nullable:  # no parent row to point at: a value the final check will remove
                for i in child_positions:
                    row[i] = _sample(generators[table.columns[i].name], True, rng)
    return rows


def _sizes(order: list[TableInfo], depths: Mapping[str, int], rng: random.Random) -> dict[str, int]:
    uniform = rng.random() < 0.5
    sizes = {}
    for table in order:
        if uniform:
            size = rng.randint(1, 25) + rng.randint(0, 40)
        else:
            size = int((1 + 15 * rng.random()) * 2 ** depths[table.name.lower()])
        sizes[table.name.lower()] = min(MAX_ROWS, max(1, size))
    return sizes


def _check_foreign_keys(conn: sqlite3.Connection, profile: DatabaseProfile) -> tuple[dict[str, str], int]:
    """Exempt tables whose declarations SQLite rejects; delete dangling rows of the others."""
    invalid: dict[str, str] = {}
    checked = []
    for table in profile.tables.values():
        if not table.foreign_keys:
            continue
        try:
            conn.execute(f"PRAGMA foreign_key_check({quote_identifier(table.name)})").fetchall()
        except sqlite3.Error as error:
            invalid[table.name] = str(error)
            continue
        if table.has_rowid:
            checked.append(table)
    removed = 0
    for _ in range(100):  # deleting a parent row can orphan a grandchild: repeat until clean
        dangling = [
            (table.name, row[1])
            for table in checked
            for row in conn.execute(f"PRAGMA foreign_key_check({quote_identifier(table.name)})").fetchall()
        ]
        if not dangling:
            break
        for name, rowid in dict.fromkeys(dangling):
            conn.execute(f"DELETE FROM {quote_identifier(name)} WHERE rowid = ?", (rowid,))
            removed += 1
    return invalid, removed


def fuzz_database(
    profile: DatabaseProfile,
    constants: Constants,
    seed: str,
    out: str | Path,
    joins: Mapping[str, Sequence[ForeignKey]] | None = None,
) -> FuzzReport:
    """Write a random database with ``profile``'s schema to ``out`` (replaced if present).
    ``joins``: undeclared links per child table (:func:`join_links`) to draw values through."""
    rng = random.Random(seed)
    fresh_p = 0.0 if rng.random() < 0.3 else 0.2
    order = table_order(profile)
    sizes = _sizes(order, _depths(profile, order), rng)
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for statement in profile.ddl:
            conn.execute(statement)
        conn.execute("BEGIN")
        parents: dict[str, list[tuple[SQLValue, ...]]] = {}
        for table in order:
            generators = {c.name: _generator(table, c, constants, fresh_p, rng) for c in table.columns}
            links = (joins or {}).get(table.name.lower(), ())
            rows = _table_rows(profile, table, sizes[table.name.lower()], generators, parents, rng, links)
            columns = ", ".join(quote_identifier(c.name) for c in table.columns)
            marks = ", ".join("?" for _ in table.columns)
            insert = f"INSERT OR IGNORE INTO {quote_identifier(table.name)} ({columns}) VALUES ({marks})"
            for row in rows:
                try:
                    conn.execute(insert, row)
                except sqlite3.Error:  # e.g. text in an INTEGER PRIMARY KEY: the engine says no, skip it
                    continue
            parents[table.name.lower()] = [
                tuple(r) for r in conn.execute(f"SELECT {columns} FROM {quote_identifier(table.name)}")
            ]
        invalid, removed = _check_foreign_keys(conn, profile)
        for trigger in profile.triggers:
            conn.execute(trigger)
        conn.execute("COMMIT")
        counts = {
            t.name: int(conn.execute(f"SELECT count(*) FROM {quote_identifier(t.name)}").fetchone()[0])
            for t in profile.tables.values()
        }
        target = Path(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        conn.execute("VACUUM INTO ?", (str(target),))
    finally:
        conn.close()
    return FuzzReport(str(out), counts, invalid, removed)
