"""The diagnostic tag catalogue (docs/odt.md#tag-catalogue): every tag, what it means, when it fires, and
an example pair (the examples double as tests). Structural tags are emitted by :mod:`.score`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from progress_sql.sql.lexical import jaccard

if TYPE_CHECKING:  # profiles come from the parser; the tags themselves are plain records
    from progress_sql.odt.profile import SelectProfile

Category = Literal["SELECT", "JOIN", "WHERE", "GROUP", "other", "nesting", "parse", "DML"]
Similarities = Mapping[str, float]
Applies = Callable[["SelectProfile", "SelectProfile"], bool]
Similarity = Callable[["SelectProfile", "SelectProfile", Similarities], float]


@dataclass(frozen=True, slots=True)
class TagSpec:
    """One catalogue entry. ``description`` is what the policy reads; it never quotes the gold."""

    name: str
    category: Category
    description: str
    trigger: str
    example_pred: str
    example_gold: str


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """One tag and where it was found: ``location`` is the path of nested nodes from the main query,
    each step a subquery's clause (``where``, ``from``, ``select``, ``having``, ``join``, ...), a CTE
    (``cte:name``) or a set-operation arm (``union#2``); the empty path is the main query.

    >>> str(Finding("SELECT_ERROR", ("where",))), str(Finding("WHERE_MISSING"))
    ('SELECT_ERROR@where', 'WHERE_MISSING')
    """

    tag: str
    location: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.tag}@{'/'.join(self.location)}" if self.location else self.tag

    def within(self, step: str) -> Finding:
        """This finding seen from the parent of the node at ``step`` ('' adds nothing)."""
        return Finding(self.tag, (step, *self.location)) if step else self

    @classmethod
    def parse(cls, text: str) -> Finding:
        """The inverse of ``str``: ``"SELECT_ERROR@where/from"``."""
        tag, _, location = text.strip().partition("@")
        return cls(tag.strip(), tuple(step.strip() for step in location.split("/")) if location else ())


@dataclass(frozen=True, slots=True)
class LocalRule:
    """When a local tag fires: ``applies`` holds and ``similarity`` is below the threshold."""

    tag: str
    similarity: Similarity
    applies: Applies = lambda pred, gold: True


class FeatureSimilarity:
    """A rule's similarity that is one feature's, ``sims[name]`` (scoring reads it without the call)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, pred: SelectProfile, gold: SelectProfile, sims: Similarities) -> float:
        return sims[self.name]


def _feature(name: str) -> Similarity:
    return FeatureSimilarity(name)


def _aggregation_similarity(pred: SelectProfile, gold: SelectProfile, sims: Similarities) -> float:
    return sims["has_aggregation"] * jaccard(pred.aggregates, gold.aggregates)


def _clause_rules(tag: str, feature: str, flag: str) -> tuple[LocalRule, LocalRule, LocalRule]:
    """MISSING / REDUNDANT / ERROR rules of an optional clause."""

    def present(profile: SelectProfile) -> bool:
        return bool(getattr(profile, flag))

    return (
        LocalRule(f"{tag}_MISSING", _feature(flag), lambda p, g: present(g) and not present(p)),
        LocalRule(f"{tag}_REDUNDANT", _feature(flag), lambda p, g: present(p) and not present(g)),
        LocalRule(f"{tag}_ERROR", _feature(feature), lambda p, g: present(p) and present(g)),
    )


def _both_join(pred: SelectProfile, gold: SelectProfile) -> bool:
    return pred.join_count > 0 and gold.join_count > 0


LOCAL_RULES: tuple[LocalRule, ...] = (
    LocalRule("SELECT_ERROR", lambda p, g, s: min(s["select_items"], s["item_count"])),
    LocalRule("SELECT_ORDER_MISMATCH", _feature("select_order")),
    LocalRule(
        "AGGREGATION_MISMATCH", _aggregation_similarity, lambda p, g: not (p.projection_free or g.projection_free)
    ),
    LocalRule("DISTINCT_MISMATCH", _feature("distinct")),
    LocalRule("FROM_OR_JOIN_TABLE_MISMATCH", _feature("tables")),
    LocalRule("JOIN_MISSING", _feature("join_count"), lambda p, g: p.join_count < g.join_count),
    LocalRule("JOIN_REDUNDANT", _feature("join_count"), lambda p, g: p.join_count > g.join_count),
    LocalRule("JOIN_KEY_MISMATCH", _feature("join_keys"), _both_join),
    LocalRule("JOIN_TYPE_MISMATCH", _feature("join_type"), _both_join),
    *_clause_rules("WHERE", "where", "has_where"),
    *_clause_rules("GROUP_BY", "group_by", "has_group_by"),
    *_clause_rules("HAVING", "having", "has_having"),
    LocalRule("ORDER_BY_MISSING", _feature("has_order_by"), lambda p, g: g.has_order_by and not p.has_order_by),
    LocalRule("ORDER_BY_REDUNDANT", _feature("has_order_by"), lambda p, g: p.has_order_by and not g.has_order_by),
    LocalRule("ORDER_BY_ERROR", _feature("order_keys"), lambda p, g: p.has_order_by and g.has_order_by),
    LocalRule("NULLS_ORDER_MISMATCH", _feature("nulls_order"), lambda p, g: p.has_order_by and g.has_order_by),
    LocalRule("LIMIT_MISMATCH", _feature("limit_presence")),
    LocalRule("LIMIT_VALUE_MISMATCH", _feature("limit_value"), lambda p, g: p.has_limit and g.has_limit),
    LocalRule("OFFSET_MISMATCH", _feature("offset")),
)

_T = "SELECT name FROM singer"
CATALOGUE: tuple[TagSpec, ...] = (
    TagSpec("SELECT_ERROR", "SELECT", "SELECT projection differs from reference.",
            "sim(S) < 1 or the number of SELECT items differs",
            "SELECT name, age FROM singer", _T),
    TagSpec("SELECT_ORDER_MISMATCH", "SELECT", "SELECT columns are in a different order from reference.",
            "the SELECT items both sides share appear in another order (ours: a positional comparison, "
            "e.g. BIRD's, fails on it)",
            "SELECT age, name FROM singer", "SELECT name, age FROM singer"),
    TagSpec("AGGREGATION_MISMATCH", "SELECT", "Aggregation usage differs from reference.",
            "the aggregation flag or the set of aggregate functions in the SELECT list differs",
            "SELECT max(age) FROM singer", "SELECT avg(age) FROM singer"),
    TagSpec("DISTINCT_MISMATCH", "SELECT", "DISTINCT usage differs from reference.",
            "SELECT DISTINCT on one side only (COUNT(DISTINCT x) is an aggregate argument, not this flag)",
            "SELECT DISTINCT name FROM singer", _T),
    TagSpec("FROM_OR_JOIN_TABLE_MISMATCH", "JOIN", "FROM/JOIN tables differ from expected.",
            "sim(T) < 1: the sets of FROM/JOIN sources differ (aliases resolved, self-joins kept apart)",
            "SELECT name FROM artist", _T),
    TagSpec("JOIN_MISSING", "JOIN", "A required join is missing.",
            "fewer joined sources than the reference",
            "SELECT T1.name FROM singer AS T1",
            "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id"),
    TagSpec("JOIN_REDUNDANT", "JOIN", "Redundant join structures are introduced.",
            "more joined sources than the reference",
            "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id",
            "SELECT T1.name FROM singer AS T1"),
    TagSpec("JOIN_KEY_MISMATCH", "JOIN", "Join conditions differ from reference.",
            "sim(J) < 1 while both sides join (ON conditions, USING, and column = column WHERE predicates "
            "across two tables)",
            "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.concert_id",
            "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id"),
    TagSpec("JOIN_TYPE_MISMATCH", "JOIN", "Join types (INNER / LEFT / RIGHT / FULL) differ from reference.",
            "both sides join and the outer join sides differ (ours; a comma, CROSS or NATURAL join is inner)",
            "SELECT T1.name FROM singer AS T1 LEFT JOIN concert AS T2 ON T1.id = T2.singer_id",
            "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id"),
    TagSpec("WHERE_MISSING", "WHERE", "Filtering predicates are missing.",
            "the reference filters rows, the prediction does not",
            _T, "SELECT name FROM singer WHERE age > 30"),
    TagSpec("WHERE_REDUNDANT", "WHERE", "Unnecessary filtering predicates are introduced.",
            "the prediction filters rows, the reference does not",
            "SELECT name FROM singer WHERE age > 30", _T),
    TagSpec("WHERE_ERROR", "WHERE", "Filtering predicates differ from reference.",
            "both filter and sim(W) < 1 (atoms split on AND, literals as placeholders)",
            "SELECT name FROM singer WHERE age < 30", "SELECT name FROM singer WHERE age > 30"),
    TagSpec("GROUP_BY_MISSING", "GROUP", "GROUP BY is missing.",
            "the reference groups, the prediction does not",
            "SELECT country, count(*) FROM singer", "SELECT country, count(*) FROM singer GROUP BY country"),
    TagSpec("GROUP_BY_REDUNDANT", "GROUP", "GROUP BY is unnecessary.",
            "the prediction groups, the reference does not",
            "SELECT country FROM singer GROUP BY country", "SELECT country FROM singer"),
    TagSpec("GROUP_BY_ERROR", "GROUP", "GROUP BY columns are not aligned with reference.",
            "both group and sim(G) < 1",
            "SELECT count(*) FROM singer GROUP BY name", "SELECT count(*) FROM singer GROUP BY country"),
    TagSpec("HAVING_MISSING", "GROUP", "HAVING condition is missing.",
            "the reference has HAVING, the prediction does not",
            "SELECT country FROM singer GROUP BY country",
            "SELECT country FROM singer GROUP BY country HAVING count(*) > 1"),
    TagSpec("HAVING_REDUNDANT", "GROUP", "HAVING condition is unnecessary.",
            "the prediction has HAVING, the reference does not",
            "SELECT country FROM singer GROUP BY country HAVING count(*) > 1",
            "SELECT country FROM singer GROUP BY country"),
    TagSpec("HAVING_ERROR", "GROUP", "HAVING condition differs from reference.",
            "both have HAVING and sim(H) < 1",
            "SELECT country FROM singer GROUP BY country HAVING max(age) > 1",
            "SELECT country FROM singer GROUP BY country HAVING count(*) > 1"),
    TagSpec("ORDER_BY_MISSING", "other", "Ordering is missing.",
            "the reference orders, the prediction does not",
            _T, "SELECT name FROM singer ORDER BY age"),
    TagSpec("ORDER_BY_REDUNDANT", "other", "Ordering is unnecessary.",
            "the prediction orders, the reference does not",
            "SELECT name FROM singer ORDER BY age", _T),
    TagSpec("ORDER_BY_ERROR", "other", "Ordering differs from reference.",
            "both order and sim(O) < 1 (direction included; ASC is explicit)",
            "SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age DESC"),
    TagSpec("NULLS_ORDER_MISMATCH", "other", "Placement of NULLs in the ordering (NULLS FIRST / LAST) differs "
            "from reference.",
            "both order and the keys with a NULLs placement other than SQLite's default differ (ours)",
            "SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age NULLS LAST"),
    TagSpec("LIMIT_MISMATCH", "other", "Row limit usage differs from reference.",
            "LIMIT on one side only",
            "SELECT name FROM singer ORDER BY age", "SELECT name FROM singer ORDER BY age LIMIT 1"),
    TagSpec("LIMIT_VALUE_MISMATCH", "other", "The number of rows kept by LIMIT differs from reference.",
            "both have LIMIT with another row count (ours)",
            "SELECT name FROM singer ORDER BY age LIMIT 3", "SELECT name FROM singer ORDER BY age LIMIT 1"),
    TagSpec("OFFSET_MISMATCH", "other", "OFFSET (rows skipped before the limit) differs from reference.",
            "OFFSET on one side only, or another offset (ours; LIMIT a, b has offset a)",
            "SELECT name FROM singer ORDER BY age LIMIT 1", "SELECT name FROM singer ORDER BY age LIMIT 1 OFFSET 1"),
    TagSpec("SUBQUERY_MISSING", "nesting", "A nested query is missing.",
            "a reference SUBQUERY node has no counterpart in the prediction",
            "SELECT name FROM singer WHERE age > 30",
            "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)"),
    TagSpec("SUBQUERY_REDUNDANT", "nesting", "An unnecessary nested query is introduced.",
            "a predicted SUBQUERY node has no counterpart in the reference",
            "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)",
            "SELECT name FROM singer WHERE age > 30"),
    TagSpec("SUBQUERY_ERROR", "nesting", "A nested query is structured differently from reference.",
            "a matched SUBQUERY pair scores below 1 (the nested query's own tags are reported too, located in it)",
            "SELECT name FROM singer WHERE age > (SELECT max(age) FROM singer)",
            "SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)"),
    TagSpec("SET_OP_MISMATCH", "nesting", "Set operation differs from reference.",
            "the set operation (UNION, UNION ALL, INTERSECT, EXCEPT, none) or its number of arms differs",
            "SELECT name FROM singer UNION SELECT name FROM artist",
            "SELECT name FROM singer INTERSECT SELECT name FROM artist"),
    TagSpec("CTE_MISSING", "nesting", "A common table expression is missing.",
            "a reference CTE (scored where it is read, like a derived table) has no counterpart",
            "SELECT name FROM singer",
            "WITH s AS (SELECT name FROM singer) SELECT name FROM s"),
    TagSpec("CTE_REDUNDANT", "nesting", "An unnecessary common table expression is introduced.",
            "a predicted CTE (where it is read, or one nobody reads) has no counterpart in the reference",
            "WITH s AS (SELECT name FROM singer) SELECT name FROM s",
            "SELECT name FROM singer"),
    TagSpec("CTE_ERROR", "nesting", "A common table expression differs from reference.",
            "a predicted CTE matched with a reference CTE or derived table scores below 1",
            "WITH s AS (SELECT name FROM singer WHERE age > 1) SELECT name FROM s",
            "WITH s AS (SELECT name FROM singer) SELECT name FROM s"),
    TagSpec("PARSE_ERROR", "parse", "The previous SQL could not be parsed.",
            "the prediction is not one parsable SQL query, or SQLite refuses to compile it against the schema "
            "when one is given (the fallback message replaces clause feedback)",
            "SELEC name FROM singer", _T),
    # Write statements (odt/dml.py): compared statement by statement against the reference script.
    TagSpec("DML_KIND_MISMATCH", "DML", "The statement kind (INSERT, UPDATE or DELETE) differs from reference.",
            "a statement's kind differs from the reference statement at the same position",
            "DELETE FROM singer WHERE age > 40", "UPDATE singer SET age = 40 WHERE age > 40"),
    TagSpec("DML_TARGET_MISMATCH", "DML", "The table written to differs from reference.",
            "the INSERT / UPDATE / DELETE target table differs",
            "DELETE FROM concert WHERE year < 2014", "DELETE FROM singer WHERE year < 2014"),
    TagSpec("DML_STATEMENT_COUNT_MISMATCH", "DML", "The number of write statements differs from reference.",
            "the script has more or fewer statements than the reference (missing ones score 0)",
            "DELETE FROM singer WHERE age > 40",
            "DELETE FROM singer_in_concert WHERE singer_id = 1; DELETE FROM singer WHERE singer_id = 1"),
    TagSpec("INSERT_COLUMNS_MISMATCH", "DML", "The INSERT column list differs from reference.",
            "the named columns of an INSERT differ, in set or order",
            "INSERT INTO singer (name, age) VALUES ('a', 1)", "INSERT INTO singer (name, country) VALUES ('a', 'b')"),
    TagSpec("INSERT_VALUES_MISMATCH", "DML", "The inserted VALUES rows differ in number or width from reference.",
            "both insert VALUES and the row count or row width differs",
            "INSERT INTO singer (name) VALUES ('a')", "INSERT INTO singer (name) VALUES ('a'), ('b')"),
    TagSpec("INSERT_SOURCE_ERROR", "DML", "The query feeding INSERT ... SELECT differs from reference.",
            "VALUES on one side and a query on the other, or the source queries score below 1 (their own "
            "tags are reported too, located in the source)",
            "INSERT INTO singer (name) SELECT name FROM artist",
            "INSERT INTO singer (name) SELECT name FROM artist WHERE age > 30"),
    TagSpec("SET_ERROR", "DML", "The SET assignments of UPDATE differ from reference.",
            "the set of assigned columns with their expressions (literals as placeholders) differs",
            "UPDATE singer SET age = age + 1 WHERE singer_id = 1", "UPDATE singer SET age = 30 WHERE singer_id = 1"),
    TagSpec("DML_WHERE_MISSING", "DML", "The UPDATE or DELETE has no row filter, but one is needed.",
            "the reference statement filters rows (WHERE), the prediction does not",
            "DELETE FROM singer", "DELETE FROM singer WHERE age > 40"),
    TagSpec("DML_WHERE_REDUNDANT", "DML", "The UPDATE or DELETE filters rows that should all change.",
            "the prediction filters rows (WHERE), the reference statement does not",
            "UPDATE singer SET age = 1 WHERE age > 40", "UPDATE singer SET age = 1"),
    TagSpec("DML_WHERE_ERROR", "DML", "The UPDATE or DELETE row filter differs from reference.",
            "both filter and their WHERE, compared as a SELECT's, scores below 1 (nested queries get their "
            "own located tags)",
            "DELETE FROM singer WHERE age < 40", "DELETE FROM singer WHERE country = 'France'"),
)  # fmt: skip

TAGS: Mapping[str, TagSpec] = {spec.name: spec for spec in CATALOGUE}
#: Order in which tags are reported: the catalogue order.
TAG_ORDER: Mapping[str, int] = {spec.name: index for index, spec in enumerate(CATALOGUE)}
