"""Random databases with the original schema (test-suite accuracy, Zhong, Yu and Klein 2020, A.2 of
docs/evaluation-semantics.md).

Per column, a small value pool: a few original values, plus the gold queries' constants (double-quoted
literals included, through :func:`progress_sql.odt.normalize.parse_for_odt`) and their near misses.
Tables are filled parents first; a foreign-key column draws from the rows its parent actually got,
so joins match; primary keys and UNIQUE sets are enforced by the engine (a rejected row is skipped);
foreign keys whose declarations SQLite accepts are checked at the end and any dangling row removed,
while invalid declarations (a parent key that is not unique, a missing parent) are reported and
exempted. Table sizes vary between databases. The same profile, constants and seed give the same
bytes: rows are inserted in a fixed order into an in-memory database, which ``VACUUM INTO`` writes
out (no timestamps, no free pages).
"""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlglot import exp

from progress_sql.data.schema import Schema
from progress_sql.odt.normalize import parse_for_odt
from progress_sql.testsuite.profile import ColumnInfo, DatabaseProfile, ForeignKey, TableInfo
from progress_sql.testsuite.values import GENERATORS, ColumnGenerator, near_misses
from progress_sql.types import SQLValue

ColumnKey = tuple[str, str]  # (table, column), lower-cased
Constants = Mapping[ColumnKey, tuple[SQLValue, ...]]

#: Original values per column pool, and the largest table a fuzzed database gets.
POOL_ORIGINALS = 5
MAX_ROWS = 300
#: Chance of a fresh value in a single-column key (a pool value would mostly repeat an earlier row).
KEY_FRESH_P = 0.7

_INTEGER = re.compile(r"-?\d+")
_COMPARISONS: tuple[type[exp.Expr], ...] = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)


@dataclass(frozen=True, slots=True)
class FuzzReport:
    """What one fuzzed database got: rows per table, foreign keys exempted (table -> why) and how
    many rows were removed because they pointed at no parent row."""

    path: str
    rows: Mapping[str, int]
    invalid_foreign_keys: Mapping[str, str]
    dangling_removed: int


def profile_schema(profile: DatabaseProfile) -> Schema:
    """The table / column names of a profile, as the ODT's normalization wants them."""
    return Schema.from_mapping({t.name: [c.name for c in t.columns] for t in profile.tables.values()})


def literal_value(node: exp.Expr) -> SQLValue | None:
    """The Python value of a literal (a signed number or a string), None for anything else.

    >>> literal_value(exp.Literal.number(-3)), literal_value(exp.Literal.string("x"))
    (-3, 'x')
    """
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        inner = literal_value(node.this)
        return -inner if isinstance(inner, (int, float)) else None
    if not isinstance(node, exp.Literal):
        return None
    text = str(node.this)
    if node.is_string:
        return text
    try:
        return int(text) if _INTEGER.fullmatch(text) else float(text)
    except ValueError:
        return None


def _column_tables(column: exp.Column, aliases: Mapping[str, str], profile: DatabaseProfile) -> list[str]:
    name = column.name
    if column.table:
        table = aliases.get(column.table.lower(), column.table.lower())
        info = profile.table(table)
        return [info.name.lower()] if info is not None and info.column(name) else []
    in_query = [t for t in dict.fromkeys(aliases.values()) if (info := profile.table(t)) and info.column(name)]
    if in_query:
        return in_query
    return [key for key, info in profile.tables.items() if info.column(name)]


def _comparisons(tree: exp.Expr) -> Iterable[tuple[exp.Column, Sequence[SQLValue], bool]]:
    """(column, constants, is a LIKE pattern) for every column compared with literals."""
    for node in tree.walk():
        if isinstance(node, _COMPARISONS):
            left, right = node.this, node.expression
            if isinstance(right, exp.Column) and not isinstance(left, exp.Column):
                left, right = right, left
            value = literal_value(right)
            if isinstance(left, exp.Column) and value is not None:
                yield left, [value], isinstance(node, (exp.Like, exp.ILike))
        elif isinstance(node, exp.In) and isinstance(node.this, exp.Column):
            values = [v for v in (literal_value(e) for e in node.expressions) if v is not None]
            if values:
                yield node.this, values, False
        elif isinstance(node, exp.Between) and isinstance(node.this, exp.Column):
            ends = [literal_value(node.args["low"]), literal_value(node.args["high"])]
            yield node.this, [v for v in ends if v is not None], False


def root_column(profile: DatabaseProfile, table: str, column: str) -> ColumnKey:
    """Follow foreign keys from (table, column) to the column that has no parent (where its values
    are generated)."""
    seen = {(table, column)}
    while True:
        info = profile.table(table)
        parent = None if info is None else _parent_of(profile, info, column)
        if parent is None or parent in seen:
            return table, column
        seen.add(parent)
        table, column = parent


def _parent_of(profile: DatabaseProfile, info: TableInfo, column: str) -> ColumnKey | None:
    for fk in info.foreign_keys:
        parent_columns = resolve_parent_columns(profile, fk)
        for child, parent in zip(fk.columns, parent_columns or (), strict=False):
            if child.lower() == column.lower():
                return fk.parent.lower(), parent.lower()
    return None


def resolve_parent_columns(profile: DatabaseProfile, fk: ForeignKey) -> tuple[str, ...] | None:
    """The parent's columns a foreign key points at (its primary key when the declaration names
    none), or None when the parent table or a column does not exist."""
    parent = profile.table(fk.parent)
    if parent is None:
        return None
    columns = fk.parent_columns
    if any(parent.column(c) is None for c in columns) and len(parent.primary_key) == len(columns):
        columns = parent.primary_key
    if any(parent.column(c) is None for c in columns):
        return None
    return tuple(c for c in columns)


def gold_constants(golds: Iterable[str], profile: DatabaseProfile) -> dict[ColumnKey, tuple[SQLValue, ...]]:
    """The constants the gold queries compare columns with, per (table, column) where the fuzzer
    generates that column's values (the root of its foreign-key chain), in first-seen order."""
    schema = profile_schema(profile)
    found: dict[ColumnKey, dict[SQLValue, None]] = {}
    for sql in golds:
        tree = parse_for_odt(sql, schema)
        if not isinstance(tree, exp.Expr):
            continue
        aliases = {t.alias_or_name.lower(): t.name.lower() for t in tree.find_all(exp.Table)}
        for column, values, like in _comparisons(tree):
            for table in _column_tables(column, aliases, profile):
                info = profile.table(table)
                target = info.column(column.name) if info else None
                if target is None:
                    continue
                key = root_column(profile, table, target.name.lower())
                for value in values:
                    if like and isinstance(value, str):
                        value = value.replace("%", "").replace("_", " ").strip() or value
                    value = _as_column_value(value, target)
                    if value is not None:
                        found.setdefault(key, {})[value] = None
    return {key: tuple(values) for key, values in found.items()}


def join_links(golds: Iterable[str], profile: DatabaseProfile) -> dict[str, tuple[ForeignKey, ...]]:
    """Undeclared foreign keys that the gold queries join on (``T1.uid = T2.airline``), per child
    table: the fuzzer draws the child column from the parent's rows so that such joins find rows.
    The parent is the side that is a single-column key (or, when both or neither are, the table
    filled first). Links already declared are left out; these are never checked as constraints."""
    schema = profile_schema(profile)
    order = {t.name.lower(): i for i, t in enumerate(table_order(profile))}
    found: dict[str, dict[ForeignKey, None]] = {}
    for sql in golds:
        tree = parse_for_odt(sql, schema)
        if not isinstance(tree, exp.Expr):
            continue
        aliases = {t.alias_or_name.lower(): t.name.lower() for t in tree.find_all(exp.Table)}
        for node in tree.find_all(exp.EQ):
            left, right = node.this, node.expression
            if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                continue
            sides = []
            for column in (left, right):
                tables = _column_tables(column, aliases, profile)
                info = profile.table(tables[0]) if len(tables) == 1 else None
                target = info.column(column.name) if info else None
                if info is None or target is None:
                    break
                sides.append((info, target.name))
            if len(sides) != 2 or sides[0][0].name == sides[1][0].name:
                continue
            keys = [(t.primary_key == (c,) or (c,) in t.uniques) for t, c in sides]
            if keys[0] != keys[1]:
                parent, child = (sides[0], sides[1]) if keys[0] else (sides[1], sides[0])
            else:
                parent, child = sorted(sides, key=lambda side: order[side[0].name.lower()])
            if _parent_of(profile, child[0], child[1]) is not None:
                continue  # declared already
            link = ForeignKey((child[1],), parent[0].name, (parent[1],))
            found.setdefault(child[0].name.lower(), {})[link] = None
    return {table: tuple(links) for table, links in found.items()}


def _as_column_value(value: SQLValue, column: ColumnInfo) -> SQLValue | None:
    """The constant as the column stores it (``"80000"`` against an INTEGER column is the number
    80000, by SQLite's affinity rules), or None when it cannot be such a value."""
    if column.kind in ("integer", "real"):
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                return None
            return int(number) if number.is_integer() and column.kind == "integer" else number
        return value if isinstance(value, (int, float)) else None
    if column.kind in ("text", "date") and isinstance(value, (int, float)):
        return value if column.kind == "text" else None
    return value


# --- building one database -------------------------------------------------------------------------


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_order(profile: DatabaseProfile) -> list[TableInfo]:
    """Tables parents first (self references ignored; a cycle is broken in declaration order)."""
    remaining = list(profile.tables.values())
    placed: list[TableInfo] = []
    names: set[str] = set()
    while remaining:
        ready = next(
            (
                t
                for t in remaining
                if all(
                    fk.parent.lower() in names
                    or fk.parent.lower() == t.name.lower()
                    or profile.table(fk.parent) is None
                    for fk in t.foreign_keys
                )
            ),
            remaining[0],
        )
        remaining.remove(ready)
        placed.append(ready)
        names.add(ready.name.lower())
    return placed


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
            conn.execute(f"PRAGMA foreign_key_check({_quote(table.name)})").fetchall()
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
            for row in conn.execute(f"PRAGMA foreign_key_check({_quote(table.name)})").fetchall()
        ]
        if not dangling:
            break
        for name, rowid in dict.fromkeys(dangling):
            conn.execute(f"DELETE FROM {_quote(name)} WHERE rowid = ?", (rowid,))
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
            columns = ", ".join(_quote(c.name) for c in table.columns)
            marks = ", ".join("?" for _ in table.columns)
            insert = f"INSERT OR IGNORE INTO {_quote(table.name)} ({columns}) VALUES ({marks})"
            for row in rows:
                try:
                    conn.execute(insert, row)
                except sqlite3.Error:  # e.g. text in an INTEGER PRIMARY KEY: the engine says no, skip it
                    continue
            parents[table.name.lower()] = [
                tuple(r) for r in conn.execute(f"SELECT {columns} FROM {_quote(table.name)}")
            ]
        invalid, removed = _check_foreign_keys(conn, profile)
        for trigger in profile.triggers:
            conn.execute(trigger)
        conn.execute("COMMIT")
        counts = {
            t.name: int(conn.execute(f"SELECT count(*) FROM {_quote(t.name)}").fetchone()[0])
            for t in profile.tables.values()
        }
        target = Path(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        conn.execute("VACUUM INTO ?", (str(target),))
    finally:
        conn.close()
    return FuzzReport(str(out), counts, invalid, removed)
