"""The eleven question families, one table entry each: the SQL and paraphrase templates of its
shapes (``str.format`` strings over a binding's fields), and a binder that walks a database and fills
them; binders yield in a fixed order, which numbers the generated pairs. The fields:
docs/architecture.md#the-template-dataset-trainingtemplates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from progress_sql.data.introspect import ColumnInfo, DatabaseProfile, ForeignKey, TableInfo
from progress_sql.training.templates.wording import (
    identifier,
    is_link,
    is_number,
    literal,
    plural,
    singular,
    spoken,
    words,
)
from progress_sql.types import SQLValue

#: Longest text value a question quotes.
MAX_VALUE_CHARS = 40
#: Text values a foreign-key filter quotes per parent column.
_JOIN_VALUES = 12

Fields = dict[str, str]
Binding = tuple[str, Fields]  # (shape name, fields)


@dataclass(frozen=True, slots=True)
class Draft:
    """One template SQL with its paraphrases. ``combo`` is (table, columns...): what a
    ``heldout_new_combo`` item has never been seen with; the SQL's value, operator, direction or
    aggregate vary within a combination."""

    combo: tuple[str, ...]
    sql: str
    questions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Shape:
    """A SQL template, its paraphrases and its combination, as format strings over a binding."""

    combo: tuple[str, ...]
    sql: str
    questions: tuple[str, ...]

    def draft(self, fields: Mapping[str, str]) -> Draft:
        return Draft(
            tuple(part.format_map(fields) for part in self.combo),
            self.sql.format_map(fields),
            tuple(question.format_map(fields) for question in self.questions),
        )


@dataclass(frozen=True, slots=True)
class FamilySpec:
    """A family: its shapes by name, and the binder that fills them over a database."""

    bind: Callable[[DatabaseProfile], Iterator[Binding]]
    shapes: Mapping[str, Shape]

    def drafts(self, db: DatabaseProfile) -> Iterator[Draft]:
        for shape, fields in self.bind(db):
            yield self.shapes[shape].draft(fields)


# --------------------------------------------------------------------------------------------------
# Fields and the columns questions are about
# --------------------------------------------------------------------------------------------------


def _table(role: str, table: TableInfo) -> Fields:
    return {
        role: identifier(table.name),
        f"{role}_name": table.name,
        f"{role}_plural": plural(table),
        f"{role}_singular": singular(table),
    }


def _column(role: str, column: ColumnInfo) -> Fields:
    return {role: identifier(column.name), f"{role}_name": column.name, f"{role}_words": words(column.name)}


def _value(value: SQLValue) -> Fields:
    return {"v": literal(value), "v_spoken": spoken(value)}


def _values(table: TableInfo, number: bool | None = None) -> list[ColumnInfo]:
    """Non-key columns (numbers or text when ``number`` says), the ones questions filter, sort and
    aggregate on."""
    return [c for c in table.columns if not c.key and (number is None or is_number(c) == number)]


def _projections(table: TableInfo) -> list[ColumnInfo]:
    return [c for c in table.columns if not c.key] or list(table.columns)


def _groupable(table: TableInfo) -> list[ColumnInfo]:
    return [c for c in _values(table) if 1 < (c.distinct or 0) < (table.rows or 0)]


def _thresholds(column: ColumnInfo, op: str) -> list[SQLValue]:
    """Thresholds that leave a non-empty result: never the maximum for ``>`` nor the minimum for ``<``."""
    values = sorted(column.values, key=lambda v: float(v) if isinstance(v, (int, float, str)) else 0.0)
    return values[:-1] if op == ">" else values[1:]


def _texts(column: ColumnInfo) -> list[SQLValue]:
    return [v for v in column.values if isinstance(v, str) and 0 < len(v) <= MAX_VALUE_CHARS and v.strip() == v]


def _table_named(db: DatabaseProfile, name: str) -> TableInfo:
    table = db.table(name)
    if table is None:
        raise LookupError(f"{db.path}: a foreign key names table {name!r}, which does not exist")
    return table


def _column_links(table: TableInfo) -> list[ForeignKey]:
    """The table's foreign keys one column pair at a time (a composite key joins on each pair; a
    declaration without parent columns joins on same-named ones)."""
    return [
        ForeignKey((child,), fk.parent, (parent,))
        for fk in table.foreign_keys
        for child, parent in zip(fk.columns, fk.parent_columns or fk.columns, strict=True)
    ]


def _filtered(db: DatabaseProfile, number: bool) -> Iterator[tuple[TableInfo, ColumnInfo, ColumnInfo]]:
    """(table, filtered or sorted column of that kind, another column to show)."""
    for t in db.tables.values():
        for c in _values(t, number):
            for p in _projections(t):
                if p != c:
                    yield t, c, p


# --------------------------------------------------------------------------------------------------
# Binders
# --------------------------------------------------------------------------------------------------

_AGGREGATES = (("avg", "average"), ("max", "maximum"), ("min", "minimum"), ("sum", "total"))
_COMPARE = {">": ("greater than", "above", "more than"), "<": ("less than", "below", "smaller than")}
_HIGH_LOW = {"DESC": ("highest", "largest", "most"), "ASC": ("lowest", "smallest", "least")}
_ORDER_WORDS = {"DESC": ("from highest to lowest", "descending"), "ASC": ("from lowest to highest", "ascending")}


def _compare(op: str) -> Fields:
    w1, w2, w3 = _COMPARE[op]
    return {"op": op, "w1": w1, "w2": w2, "w3": w3}


def _bind_count(db: DatabaseProfile) -> Iterator[Binding]:
    for t in db.tables.values():
        yield "count", _table("t", t)


def _bind_list(db: DatabaseProfile) -> Iterator[Binding]:
    for t in db.tables.values():
        columns = list(t.columns)
        for c in columns:
            yield "one", {**_table("t", t), **_column("c", c)}
        for i, a in enumerate(columns):
            for b in columns[i + 1 :]:
                yield "two", {**_table("t", t), **_column("a", a), **_column("b", b)}


def _bind_groupable(*shapes: str) -> Callable[[DatabaseProfile], Iterator[Binding]]:
    def bind(db: DatabaseProfile) -> Iterator[Binding]:
        for t in db.tables.values():
            for c in _groupable(t):
                for shape in shapes:
                    yield shape, {**_table("t", t), **_column("c", c)}

    return bind


def _bind_agg(db: DatabaseProfile) -> Iterator[Binding]:
    for t in db.tables.values():
        for c in _values(t, number=True):
            for fn, word in _AGGREGATES:
                yield "agg", {**_table("t", t), **_column("c", c), "fn": fn, "word": word}


def _bind_count_where(db: DatabaseProfile) -> Iterator[Binding]:
    for t in db.tables.values():
        for c in _values(t, number=True):
            for op in _COMPARE:
                for v in _thresholds(c, op):
                    yield "count", {**_table("t", t), **_column("c", c), **_compare(op), **_value(v)}


def _bind_filter_number(db: DatabaseProfile) -> Iterator[Binding]:
    for t, c, p in _filtered(db, number=True):
        for op in _COMPARE:
            for v in _thresholds(c, op):
                yield "filter", {**_table("t", t), **_column("c", c), **_column("p", p), **_compare(op), **_value(v)}


def _bind_filter_text(db: DatabaseProfile) -> Iterator[Binding]:
    for t, c, p in _filtered(db, number=False):
        for v in _texts(c):
            yield "filter", {**_table("t", t), **_column("c", c), **_column("p", p), **_value(v)}


def _bind_top1(db: DatabaseProfile) -> Iterator[Binding]:
    for t, c, p in _filtered(db, number=True):
        for direction, (w1, w2, w3) in _HIGH_LOW.items():
            fields = {**_table("t", t), **_column("c", c), **_column("p", p), "w1": w1, "w2": w2, "w3": w3}
            # Spider writes an ascending ORDER BY without ASC.
            yield "top1", {**fields, "order": f"{fields['c']} DESC" if direction == "DESC" else fields["c"]}


def _bind_order_by(db: DatabaseProfile) -> Iterator[Binding]:
    for t, c, p in _filtered(db, number=True):
        for direction, (span, order) in _ORDER_WORDS.items():
            fields = {**_table("t", t), **_column("c", c), **_column("p", p)}
            yield "order_by", {**fields, "direction": direction, "span": span, "order": order}


def _bind_fk_join(db: DatabaseProfile) -> Iterator[Binding]:
    """Joins along each foreign key: the parent's attribute per child row, a count per parent, a
    child attribute filtered on a parent value; through link tables, both parents joined."""
    for child in db.tables.values():
        links = _column_links(child)
        for fk in links:
            parent = _table_named(db, fk.parent)
            join = (
                f"FROM {identifier(child.name)} AS T1 JOIN {identifier(fk.parent)} AS T2 "
                f"ON T1.{identifier(fk.columns[0])} = T2.{identifier(fk.parent_columns[0])}"
            )
            tables = {**_table("child", child), **_table("parent", parent), "join": join}
            for p in _values(parent):
                if not is_link(child):
                    for c in _values(child):
                        yield "pair", {**tables, **_column("c", c), **_column("p", p)}
                yield "count", {**tables, **_column("p", p), "fk": identifier(fk.columns[0])}
                if is_link(child):
                    continue
                for c in _values(child):
                    for v in _texts(p)[:_JOIN_VALUES]:
                        yield "filter", {**tables, **_column("c", c), **_column("p", p), **_value(v)}
        if is_link(child) and len(links) == 2:
            yield from _bind_through_link(db, child, links)


def _bind_through_link(db: DatabaseProfile, link: TableInfo, links: list[ForeignKey]) -> Iterator[Binding]:
    for first, second in (links, links[::-1]):
        a, b = _table_named(db, first.parent), _table_named(db, second.parent)
        join = (
            f"FROM {identifier(a.name)} AS T1 JOIN {identifier(link.name)} AS T2 ON "
            f"T1.{identifier(first.parent_columns[0])} = T2.{identifier(first.columns[0])} "
            f"JOIN {identifier(b.name)} AS T3 ON T2.{identifier(second.columns[0])} = "
            f"T3.{identifier(second.parent_columns[0])}"
        )
        tables = {**_table("link", link), **_table("a", a), **_table("b", b), "join": join}
        for p in _values(a):
            for c in _values(b, number=False):
                for v in _texts(c)[:_JOIN_VALUES]:
                    yield "through_link", {**tables, **_column("p", p), **_column("c", c), **_value(v)}


# --------------------------------------------------------------------------------------------------
# The families
# --------------------------------------------------------------------------------------------------

#: The template families, in a fixed order (name -> spec).
# fmt: off
FAMILIES: Mapping[str, FamilySpec] = {
    "count": FamilySpec(_bind_count, {
        "count": Shape(("{t_name}",), "SELECT count(*) FROM {t}", (
            "How many {t_plural} are there?",
            "Count the number of {t_plural}.",
            "What is the total number of {t_plural}?",
        )),
    }),
    "list": FamilySpec(_bind_list, {
        "one": Shape(("{t_name}", "{c_name}"), "SELECT {c} FROM {t}", (
            "List the {c_words} of all {t_plural}.",
            "What is the {c_words} of every {t_singular}?",
        )),
        "two": Shape(("{t_name}", "{a_name}", "{b_name}"), "SELECT {a} , {b} FROM {t}", (
            "List the {a_words} and {b_words} of all {t_plural}.",
            "Show the {a_words} and the {b_words} of every {t_singular}.",
            "What are the {a_words} and {b_words} of each {t_singular}?",
        )),
    }),
    "distinct": FamilySpec(_bind_groupable("list", "count"), {
        "list": Shape(("{t_name}", "{c_name}", "list"), "SELECT DISTINCT {c} FROM {t}", (
            "What are the distinct {c_words} values of the {t_plural}?",
            "List the different {c_words} of all {t_plural}.",
            "Show each distinct {c_words} among the {t_plural}.",
        )),
        "count": Shape(("{t_name}", "{c_name}", "count"), "SELECT count(DISTINCT {c}) FROM {t}", (
            "How many different {c_words} values do the {t_plural} have?",
            "Count the distinct {c_words} of the {t_plural}.",
            "Find the number of distinct {c_words} among all {t_plural}.",
        )),
    }),
    "group_count": FamilySpec(_bind_groupable("count"), {
        "count": Shape(("{t_name}", "{c_name}"), "SELECT {c} , count(*) FROM {t} GROUP BY {c}", (
            "How many {t_plural} are there for each {c_words}?",
            "Show each {c_words} and the number of {t_plural} with it.",
            "For each {c_words}, count the {t_plural}.",
        )),
    }),
    "agg": FamilySpec(_bind_agg, {
        "agg": Shape(("{t_name}", "{c_name}"), "SELECT {fn}({c}) FROM {t}", (
            "What is the {word} {c_words} of all {t_plural}?",
            "Find the {word} {c_words} among the {t_plural}.",
            "Give the {word} {c_words} over all {t_plural}.",
        )),
    }),
    "count_where": FamilySpec(_bind_count_where, {
        "count": Shape(("{t_name}", "{c_name}"), "SELECT count(*) FROM {t} WHERE {c} {op} {v}", (
            "How many {t_plural} have a {c_words} {w1} {v_spoken}?",
            "Count the {t_plural} whose {c_words} is {w2} {v_spoken}.",
            "Find the number of {t_plural} with {c_words} {w3} {v_spoken}.",
        )),
    }),
    "filter_number": FamilySpec(_bind_filter_number, {
        "filter": Shape(("{t_name}", "{p_name}", "{c_name}"), "SELECT {p} FROM {t} WHERE {c} {op} {v}", (
            "What is the {p_words} of the {t_plural} whose {c_words} is {w1} {v_spoken}?",
            "List the {p_words} of {t_plural} with {c_words} {w2} {v_spoken}.",
            "Show the {p_words} for all {t_plural} that have {c_words} {w3} {v_spoken}.",
        )),
    }),
    "filter_text": FamilySpec(_bind_filter_text, {
        "filter": Shape(("{t_name}", "{p_name}", "{c_name}"), "SELECT {p} FROM {t} WHERE {c} = {v}", (
            "What is the {p_words} of the {t_singular} whose {c_words} is {v_spoken}?",
            "Show the {p_words} of {t_plural} with {c_words} {v_spoken}.",
            "Find the {p_words} of all {t_plural} where {c_words} equals {v_spoken}.",
        )),
    }),
    "top1": FamilySpec(_bind_top1, {
        "top1": Shape(("{t_name}", "{p_name}", "{c_name}"), "SELECT {p} FROM {t} ORDER BY {order} LIMIT 1", (
            "What is the {p_words} of the {t_singular} with the {w1} {c_words}?",
            "Which {t_singular} has the {w2} {c_words}? Give its {p_words}.",
            "Show the {p_words} of the {t_singular} with the {w3} {c_words}.",
        )),
    }),
    "order_by": FamilySpec(_bind_order_by, {
        "order_by": Shape(("{t_name}", "{p_name}", "{c_name}"), "SELECT {p} FROM {t} ORDER BY {c} {direction}", (
            "List the {p_words} of all {t_plural} ordered by {c_words} {span}.",
            "Show the {p_words} of the {t_plural} in {order} order of {c_words}.",
        )),
    }),
    "fk_join": FamilySpec(_bind_fk_join, {
        "pair": Shape(
            ("{child_name}", "{parent_name}", "{c_name}", "{p_name}", "pair"),
            "SELECT T1.{c} , T2.{p} {join}", (
            "Show the {c_words} of each {child_singular} and the {p_words} of its {parent_singular}.",
            "For every {child_singular}, list its {c_words} and the {p_words} of the {parent_singular}.",
        )),
        "count": Shape(
            ("{child_name}", "{parent_name}", "{p_name}", "count"),
            "SELECT T2.{p} , count(*) {join} GROUP BY T1.{fk}", (
            "For each {parent_singular}, show its {p_words} and the number of {child_plural}.",
            "How many {child_plural} does each {parent_singular} have? List the {p_words} too.",
            "Show the {p_words} of every {parent_singular} with its count of {child_plural}.",
        )),
        "filter": Shape(
            ("{child_name}", "{parent_name}", "{c_name}", "{p_name}", "filter"),
            "SELECT T1.{c} {join} WHERE T2.{p} = {v}", (
            "What is the {c_words} of the {child_plural} whose {parent_singular} has {p_words} {v_spoken}?",
            "List the {c_words} of {child_plural} of the {parent_singular} with {p_words} {v_spoken}.",
        )),
        "through_link": Shape(
            ("{link_name}", "{a_name}", "{b_name}", "{p_name}", "{c_name}"),
            "SELECT T1.{p} {join} WHERE T3.{c} = {v}", (
            "What is the {p_words} of the {a_plural} linked to {b_plural} whose {c_words} is {v_spoken}?",
            "List the {p_words} of {a_plural} with a {b_singular} of {c_words} {v_spoken}.",
        )),
    }),
}
# fmt: on
