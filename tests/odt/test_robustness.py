"""The ODT never fails on model output: property tests over hostile input, and the parser's limits.

Whatever the prediction (arbitrary text with control characters and NUL, mangled SQL, unbalanced
quotes, prose, whitespace, a megabyte of SQL, nesting at and beyond the limits), :func:`diagnose`
returns a diagnosis with scores in [0, 1], catalogue tags and non-empty feedback that never quotes the
gold. A valid query compared with itself, or with a rewrite that only renames aliases or changes
layout, is structurally identical. About 6,000 generated inputs run in all.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progress_sql.odt import TAGS, Diagnosis, GoldReference, build_odt, diagnose, prepare_gold
from progress_sql.odt.dml import is_write_script
from progress_sql.sql.parse import MAX_AST_DEPTH, MAX_PAREN_DEPTH, MAX_SQL_CHARS, ParseFailure, parse_sql

try:
    from .sql_rewrite import rename_aliases_sql, rewrite
except ImportError:  # collected without a package (no __init__.py beside this file)
    from sql_rewrite import rename_aliases_sql, rewrite  # type: ignore[no-redef,import-not-found]

STATUSES = ("ok", "pred_unparsable", "gold_unparsable")
FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

#: Real-looking queries (Spider and BIRD style) used as golds and as material for mangling.
QUERIES = (
    "SELECT count(*) FROM singer",
    "SELECT name ,  country ,  age FROM singer ORDER BY age DESC",
    "SELECT T2.concert_name FROM singer_in_concert AS T1 JOIN concert AS T2 ON T1.concert_id = T2.concert_id "
    "WHERE T1.singer_id = 3 GROUP BY T2.concert_id HAVING count(*) > 1",
    'SELECT Name FROM country WHERE GovernmentForm != "Republic" AND Population > 1000',
    "SELECT stadium_name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert WHERE year = 2014)",
    "SELECT name FROM stadium EXCEPT SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 "
    "ON T1.stadium_id = T2.stadium_id WHERE T1.year = 2014",
    "SELECT DISTINCT T1.Fname FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid = T2.stuid "
    "WHERE T1.age > (SELECT avg(age) FROM student) ORDER BY T1.Fname LIMIT 5",
    "SELECT `Free Meal Count (K-12)` / `Enrollment (K-12)` FROM frpm WHERE `County Name` = 'Alameda' "
    "ORDER BY (CAST(`Free Meal Count (K-12)` AS REAL) / `Enrollment (K-12)`) DESC LIMIT 1",
    "WITH ranked AS (SELECT player_id, rank() OVER (ORDER BY points DESC) AS r FROM player_stats) "
    "SELECT player_id FROM ranked WHERE r <= 3",
    "SELECT country FROM singer WHERE age > 40 INTERSECT SELECT country FROM singer WHERE age < 30",
    "SELECT T1.name, CASE WHEN T1.age >= 30 THEN 'senior' ELSE 'junior' END FROM singer AS T1 "
    "WHERE T1.name LIKE '%a%' AND T1.song_release_year BETWEEN 2000 AND 2010 OR T1.is_male = 'T'",
)
#: Distinctive identifiers of each query: feedback must never name them (it describes, never quotes).
SECRETS = {
    sql: {word for word in re.findall(r"[A-Za-z_]\w*", sql) if "_" in word and len(word) >= 8} for sql in QUERIES
}
FRAGMENTS = (
    "'", '"', "`", "[", "]", "(", ")", "((", "))", ",", ";", ".", "*", "=", "<>", "--", "/*", "*/", "\x00",
    "\n", "\\", "?", ":a", "@x", "$1", "é", "日本", "\u202e", " SELECT ", " FROM ", " WHERE ", " JOIN ",
    " ON ", " AND ", " OR ", " NOT ", " UNION ", " INTERSECT ", " GROUP BY ", " ORDER BY ", " HAVING ",
    " LIMIT ", " AS ", " IN ", " (SELECT ", " CASE WHEN ", " END ", " WITH x AS ", " NULL ", " DISTINCT ",
    " count(", " OVER (", " BETWEEN ", " LIKE ", " IS ", " EXISTS ",
)  # fmt: skip
PROSE = (
    "I am sorry, I cannot answer that question.",
    "The answer is 42.",
    "```sql\nSELECT name FROM singer\n```",
    "<think>I should join the tables first</think> SELECT",
    '{"sql": "SELECT * FROM t", "confidence": 0.9}',
    "def f(x):\n    return x + 1\n",
    "<html><body><p>SELECT</p></body></html>",
    "SELECT",
    "FROM singer",
    "Tables: singer(name, age). Question: how many singers?",
    "-- just a comment",
    "/* unterminated comment SELECT a FROM t",
    "DROP TABLE singer",
    "INSERT INTO singer VALUES (1, 'x')",
    "PRAGMA table_info(singer)",
    "SELECT 1; SELECT 2",
    "EXPLAIN QUERY PLAN SELECT a FROM t",
)
WHITESPACE = " \t\n\r\x0b\x0c\u00a0\u2003\u3000"  # what str.strip() removes (a BOM is not whitespace)


def check(d: Diagnosis, gold: str | None = None) -> None:
    """The contract of every diagnosis; with a real ``gold``, feedback never reveals it."""
    assert isinstance(d, Diagnosis)
    assert d.status in STATUSES
    for score in (d.f_struct, d.f_lex, d.f):
        assert isinstance(score, float)
        assert math.isfinite(score)
        assert 0.0 <= score <= 1.0
    assert all(0.0 <= value <= 1.0 for value in d.features.values())
    assert isinstance(d.tags, tuple)
    assert all(tag in TAGS for tag in d.tags)
    assert len(set(d.tags)) == len(d.tags)
    assert isinstance(d.feedback, str)
    assert d.feedback.strip()
    if d.status == "pred_unparsable":
        assert d.tags == ("PARSE_ERROR",)
        assert d.f_struct == 0.0
    if d.status != "ok":
        assert d.reason
    if gold is not None:
        assert gold not in d.feedback
        assert gold.strip().rstrip(";") not in d.feedback
        for secret in SECRETS.get(gold, ()):
            assert secret.lower() not in d.feedback.lower()


@pytest.fixture(scope="module")
def references() -> dict[str, GoldReference]:
    return {sql: prepare_gold(sql) for sql in QUERIES}


golds = st.sampled_from(QUERIES)


@st.composite
def mangled_sql(draw: st.DrawFn) -> str:
    """A real-looking query with random characters deleted, duplicated or inserted."""
    sql = draw(golds)
    for _ in range(draw(st.integers(1, 6))):
        operation = draw(st.sampled_from(("delete", "duplicate", "insert", "insert")))
        start = draw(st.integers(0, len(sql)))
        end = draw(st.integers(start, min(len(sql), start + 12)))
        if operation == "delete":
            sql = sql[:start] + sql[end:]
        elif operation == "duplicate":
            sql = sql[:end] + sql[start:end] + sql[end:]
        else:
            sql = sql[:start] + draw(st.sampled_from(FRAGMENTS)) + sql[start:]
    return sql


@st.composite
def unbalanced_quotes(draw: st.DrawFn) -> str:
    """A query with one or three extra quote or bracket characters somewhere."""
    sql = draw(golds)
    for _ in range(draw(st.sampled_from((1, 3)))):
        position = draw(st.integers(0, len(sql)))
        sql = sql[:position] + draw(st.sampled_from(("'", '"', "`", "[", "]"))) + sql[position:]
    return sql


non_sql = st.one_of(
    st.sampled_from(PROSE),
    st.text(alphabet=st.characters(categories=("L", "Zs", "P")), max_size=200),
    st.builds(lambda a, b: a + " " + b, st.sampled_from(PROSE), st.sampled_from(QUERIES)),
)
blank = st.text(alphabet=WHITESPACE, max_size=50)
control_text = st.text(alphabet=st.characters(max_codepoint=0x1F), max_size=100)


@settings(FAST, max_examples=1500)
@given(pred=st.text(max_size=300) | control_text, gold=golds)
def test_arbitrary_text(references: dict[str, GoldReference], pred: str, gold: str) -> None:
    check(diagnose(pred, references[gold]), gold)


@settings(FAST, max_examples=2000)
@given(pred=mangled_sql(), gold=golds)
def test_mangled_sql(references: dict[str, GoldReference], pred: str, gold: str) -> None:
    check(diagnose(pred, references[gold]), gold)


@settings(FAST, max_examples=500)
@given(pred=unbalanced_quotes(), gold=golds)
def test_unbalanced_quotes(references: dict[str, GoldReference], pred: str, gold: str) -> None:
    check(diagnose(pred, references[gold]), gold)


@settings(FAST, max_examples=500)
@given(pred=non_sql, gold=golds)
def test_non_sql_text(references: dict[str, GoldReference], pred: str, gold: str) -> None:
    check(diagnose(pred, references[gold]), gold)


@settings(FAST, max_examples=200)
@given(pred=blank, gold=golds)
def test_empty_and_whitespace(references: dict[str, GoldReference], pred: str, gold: str) -> None:
    d = diagnose(pred, references[gold])
    check(d, gold)
    assert d.status == "pred_unparsable"
    assert d.reason == "empty SQL"


@settings(FAST, max_examples=1000)
@given(gold=st.text(max_size=300) | mangled_sql() | unbalanced_quotes() | non_sql | blank, pred=golds)
def test_arbitrary_gold(pred: str, gold: str) -> None:
    d = diagnose(pred, gold)
    check(d)
    assert d.status in ("ok", "gold_unparsable")
    # A gold that is no query is unparsable, unless it is a write script (odt/dml.py diagnoses those).
    unparsable = isinstance(prepare_gold(gold).tree, ParseFailure) and not is_write_script(gold)
    assert unparsable == (d.status == "gold_unparsable")


# Explicit limits -------------------------------------------------------------------------------------

GOLD = "SELECT a FROM t WHERE a = 1"


def _where(condition: str) -> str:
    return f"SELECT a FROM t WHERE {condition}"


def _nested_in(levels: int) -> str:
    condition = "a = 1"
    for _ in range(levels):
        condition = f"a IN (SELECT a FROM t WHERE {condition})"
    return _where(condition)


def test_megabyte_of_sql_is_unparsable_by_length() -> None:
    sql = _where(" OR ".join(f"a = {i}" for i in range(80_000)))
    assert len(sql) > 1_000_000
    d = diagnose(sql, GOLD)
    check(d, GOLD)
    assert d.status == "pred_unparsable"
    assert d.reason == f"SQL longer than {MAX_SQL_CHARS} characters ({len(sql)})"
    as_gold = diagnose(GOLD, sql)
    check(as_gold)
    assert as_gold.status == "gold_unparsable"
    assert "longer than" in (as_gold.reason or "")


def test_length_limit_is_exact() -> None:
    padding = MAX_SQL_CHARS - len(_where("a = ''"))
    at_limit = _where("a = '" + "x" * padding + "'")
    assert len(at_limit) == MAX_SQL_CHARS
    assert diagnose(at_limit, GOLD).status == "ok"
    over = diagnose(at_limit[:-1] + "x'", GOLD)
    assert (over.status, over.reason) == ("pred_unparsable", f"SQL longer than {MAX_SQL_CHARS} characters (20001)")


def test_parentheses_at_the_depth_limit_parse() -> None:
    sql = _where("(" * MAX_PAREN_DEPTH + "a = 1" + ")" * MAX_PAREN_DEPTH)
    d = diagnose(sql, GOLD)
    check(d, GOLD)
    assert (d.status, d.f_struct, d.tags) == ("ok", 1.0, ())


def test_parentheses_beyond_the_depth_limit_fail_cleanly() -> None:
    depth = MAX_PAREN_DEPTH + 1
    d = diagnose(_where("(" * depth + "a = 1" + ")" * depth), GOLD)
    check(d, GOLD)
    assert d.status == "pred_unparsable"
    assert d.reason == f"parentheses nested deeper than {MAX_PAREN_DEPTH}"


#: The deepest chain of ``a IN (SELECT a FROM t WHERE ...)`` within MAX_AST_DEPTH (sqlglot 30.30's tree
#: adds four levels per subquery).
DEEPEST_IN_CHAIN = 48


def test_nested_subqueries_just_under_the_depth_limits() -> None:
    sql = _nested_in(DEEPEST_IN_CHAIN)
    d = diagnose(sql, sql)
    check(d, sql)
    assert (d.status, d.f_struct, d.tags) == ("ok", 1.0, ())
    tree = build_odt(sql)
    assert not isinstance(tree, ParseFailure)
    levels = 0
    node = tree.children[-1]
    while node.children:
        node = node.children[0].children[0]  # SELECT -> SUBQUERY where -> SELECT
        levels += 1
    assert levels == DEEPEST_IN_CHAIN


@pytest.mark.parametrize(
    ("levels", "reason"),
    [
        (DEEPEST_IN_CHAIN + 1, f"syntax tree deeper than {MAX_AST_DEPTH}"),
        (MAX_PAREN_DEPTH, f"syntax tree deeper than {MAX_AST_DEPTH}"),
        (MAX_PAREN_DEPTH + 1, f"parentheses nested deeper than {MAX_PAREN_DEPTH}"),
    ],
)
def test_nested_subqueries_over_the_depth_limits_fail_cleanly(levels: int, reason: str) -> None:
    d = diagnose(_nested_in(levels), GOLD)
    check(d, GOLD)
    assert (d.status, d.reason) == ("pred_unparsable", reason)


def test_and_chain_beyond_the_tree_depth_limit_fails_cleanly() -> None:
    sql = _where(" AND ".join(f"a = {i}" for i in range(MAX_AST_DEPTH + 100)))
    assert len(sql) < MAX_SQL_CHARS
    d = diagnose(sql, GOLD)
    check(d, GOLD)
    assert (d.status, d.reason) == ("pred_unparsable", f"syntax tree deeper than {MAX_AST_DEPTH}")
    short = _where(" AND ".join(f"a = {i}" for i in range(MAX_AST_DEPTH // 2)))
    assert diagnose(short, short).f_struct == 1.0


DEEP_CONSTRUCTS: dict[str, Callable[[int], str]] = {
    "NOT chain": lambda n: _where("NOT " * n + "a"),
    "unary minus chain": lambda n: "SELECT " + "- " * n + "1 FROM t",
    "bitwise not chain": lambda n: "SELECT " + "~" * n + "1 FROM t",
    "nested CASE": lambda n: "SELECT " + "CASE WHEN a THEN " * n + "1" + " END" * n + " FROM t",
    "nested functions": lambda n: "SELECT " + "abs(" * n + "a" + ")" * n + " FROM t",
    "nested FROM subqueries": lambda n: "SELECT a FROM (" * n + "SELECT a FROM t" + ")" * n,
    "nested EXISTS": lambda n: _where("EXISTS (SELECT a FROM t WHERE " * n + "a" + ")" * n),
    "nested UNION": lambda n: "SELECT a FROM t UNION (" * n + "SELECT a FROM t" + ")" * n,
    "nested CTEs": lambda n: "WITH c AS (" * n + "SELECT a FROM t" + ") SELECT a FROM c" * n,
    "OR chain": lambda n: _where(" OR ".join(["a = 1"] * n)),
    "concatenation": lambda n: "SELECT " + " || ".join(["a"] * n) + " FROM t",
    "UNION chain": lambda n: " UNION ".join(["SELECT a FROM t"] * n),
    "JOIN chain": lambda n: "SELECT a FROM t " + " ".join(f"JOIN t{i} ON t.a = t{i}.a" for i in range(n)),
}


@pytest.mark.parametrize("construct", sorted(DEEP_CONSTRUCTS))
@pytest.mark.parametrize("n", [10, 60, 65, 250, 1000, 5000])
def test_deep_recursion_never_raises(construct: str, n: int) -> None:
    sql = DEEP_CONSTRUCTS[construct](n)
    d = diagnose(sql, GOLD)  # a RecursionError (or any exception) here fails the test
    check(d, GOLD)
    itself = diagnose(sql, sql)
    check(itself)
    if itself.status == "ok":
        assert (itself.f_struct, itself.tags) == (1.0, ())
    else:
        assert itself.status == "gold_unparsable"
        assert itself.reason == parse_or_build_failure(sql)


def parse_or_build_failure(sql: str) -> str | None:
    tree = build_odt(sql)
    return tree.reason if isinstance(tree, ParseFailure) else None


def test_parse_failures_are_reasons_not_exceptions() -> None:
    failure = parse_sql(None)
    assert isinstance(failure, ParseFailure)
    assert failure.reason == "expected a string, got NoneType"
    d = diagnose(None, GOLD)  # type: ignore[arg-type]
    check(d, GOLD)
    assert d.status == "pred_unparsable"


# Generated valid queries ------------------------------------------------------------------------------

SCHEMA = {
    "singer": ("singer_id", "name", "age", "country"),
    "concert": ("concert_id", "singer_id", "stadium_id", "year", "theme"),
    "stadium": ("stadium_id", "name", "capacity", "location"),
}
TABLES = sorted(SCHEMA)
values = st.one_of(
    st.integers(-5, 3000).map(str),
    st.sampled_from(("'France'", "'a''b'", '"Republic"', "'%ab%'", "'Mixed Case'", "2.5", "NULL")),
)


@st.composite
def select_queries(draw: st.DrawFn, depth: int = 0) -> str:
    """A valid single SELECT over :data:`SCHEMA`, with optional join, clauses and nested queries."""
    first = draw(st.sampled_from(TABLES))
    joined = draw(st.sampled_from([None, *TABLES]))
    aliased = joined is not None or draw(st.booleans())
    sources = [(first, "T1" if aliased else None)]
    from_sql = f"{first} AS T1" if aliased else first
    if joined is not None:
        sources.append((joined, "T2"))
        key_left = draw(st.sampled_from(SCHEMA[first]))
        key_right = draw(st.sampled_from(SCHEMA[joined]))
        from_sql += f" JOIN {joined} AS T2 ON T1.{key_left} = T2.{key_right}"

    def column() -> str:
        table, alias = draw(st.sampled_from(sources))
        name = draw(st.sampled_from(SCHEMA[table]))
        qualifier = alias or draw(st.sampled_from(("", f"{table}.")))
        return f"{alias}.{name}" if alias else f"{qualifier}{name}"

    def predicate() -> str:
        kind = draw(st.sampled_from(("cmp", "cmp", "like", "between", "in_list", "is_null", "in_sub", "scalar")))
        if kind == "cmp":
            return f"{column()} {draw(st.sampled_from(('=', '!=', '<>', '>', '>=', '<', '<=')))} {draw(values)}"
        if kind == "like":
            return f"{column()} {draw(st.sampled_from(('LIKE', 'NOT LIKE')))} {draw(values)}"
        if kind == "between":
            return f"{column()} BETWEEN {draw(values)} AND {draw(values)}"
        if kind == "in_list":
            return f"{column()} IN ({', '.join(draw(st.lists(values, min_size=1, max_size=3)))})"
        if kind == "is_null":
            return f"{column()} IS {draw(st.sampled_from(('NULL', 'NOT NULL')))}"
        if depth >= 2:
            return f"{column()} = {draw(values)}"
        inner = draw(select_queries(depth=depth + 1))
        if kind == "in_sub":
            return f"{column()} {draw(st.sampled_from(('IN', 'NOT IN')))} ({inner})"
        table = draw(st.sampled_from(TABLES))
        return f"{column()} > (SELECT avg({draw(st.sampled_from(SCHEMA[table]))}) FROM {table})"

    items = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("column", "column", "count", "aggregate", "star")))
        if kind == "column":
            items.append(column())
        elif kind == "count":
            items.append(draw(st.sampled_from(("count(*)", f"count(DISTINCT {column()})"))))
        elif kind == "aggregate":
            items.append(f"{draw(st.sampled_from(('max', 'min', 'avg', 'sum')))}({column()})")
        else:
            items.append("*")
    distinct = draw(st.sampled_from(("", "DISTINCT ")))
    sql = f"SELECT {distinct}{', '.join(items)} FROM {from_sql}"
    if draw(st.booleans()):
        condition = predicate()
        for _ in range(draw(st.integers(0, 3))):
            condition += f" {draw(st.sampled_from(('AND', 'AND', 'OR')))} {predicate()}"
        sql += f" WHERE {condition}"
    if draw(st.booleans()):
        sql += f" GROUP BY {column()}"
        if draw(st.booleans()):
            sql += f" HAVING count(*) {draw(st.sampled_from(('>', '>=', '=')))} {draw(st.integers(0, 9))}"
    if depth == 0 and draw(st.booleans()):
        keys = [
            f"{column()} {draw(st.sampled_from(('', 'ASC', 'DESC')))}".strip() for _ in range(draw(st.integers(1, 2)))
        ]
        sql += f" ORDER BY {', '.join(keys)}"
        if draw(st.booleans()):
            sql += f" LIMIT {draw(st.integers(1, 10))}"
    return sql


@st.composite
def valid_queries(draw: st.DrawFn) -> str:
    sql = draw(select_queries())
    if draw(st.integers(0, 3)) == 0:  # a set operation of plain arms
        operator = draw(st.sampled_from(("UNION", "UNION ALL", "INTERSECT", "EXCEPT")))
        arm = draw(select_queries(depth=1))
        sql = f"{draw(select_queries(depth=1))} {operator} {arm}"
    return sql


def _identical(d: Diagnosis) -> bool:
    return d.status == "ok" and d.f_struct == 1.0 and d.tags == ()


@settings(FAST, max_examples=600)
@given(sql=valid_queries(), seed=st.integers(0, 2**16))
def test_valid_query_is_identical_to_itself_and_its_rewrites(sql: str, seed: int) -> None:
    assert not isinstance(parse_sql(sql), ParseFailure), sql
    gold = prepare_gold(sql)
    itself = diagnose(sql, gold)
    check(itself)
    assert _identical(itself), (sql, itself)
    renamed = rename_aliases_sql(sql)
    assert _identical(diagnose(renamed, gold)), (sql, renamed, diagnose(renamed, gold))
    rewritten = rewrite(sql, seed)
    assert _identical(diagnose(rewritten, gold)), (sql, rewritten, diagnose(rewritten, gold))
