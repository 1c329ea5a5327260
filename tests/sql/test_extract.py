"""Format verdicts and SQL recovery from model text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progress_sql.sql.extract import extract


@pytest.mark.parametrize(
    ("text", "sql", "format_ok", "source"),
    [
        ("<think>join them</think><sql>SELECT 1</sql>", "SELECT 1", True, "tags"),
        ("  <think>a</think>\n\n<sql>\nSELECT 1;\n</sql>\n", "SELECT 1;", True, "tags"),
        ("<THINK>a</THINK><SQL>SELECT 1</SQL>", "SELECT 1", True, "tags"),
        ("Here you go: <think>a</think><sql>SELECT 1</sql>", "SELECT 1", False, "tags"),
        ("<think>a</think><sql>SELECT 1</sql> Hope this helps", "SELECT 1", False, "tags"),
        ("<sql>SELECT 1</sql>", "SELECT 1", False, "tags"),
        ("<think>a</think><sql>SELECT 1</sql><sql>SELECT 2</sql>", "SELECT 2", False, "tags"),
        ("<think>a</think><sql>   </sql>", None, False, "tags"),
        ("<think>a</think>\n```sql\nSELECT 3\n```", "SELECT 3", False, "fenced"),
        ("```\nSELECT 4\n```", "SELECT 4", False, "fenced"),
        ("select name from singer", "select name from singer", False, "bare"),
        ("WITH c AS (SELECT 1) SELECT * FROM c", "WITH c AS (SELECT 1) SELECT * FROM c", False, "bare"),
        (
            "Answer: with t(a, b) as (select 1, 2) select a from t",
            "with t(a, b) as (select 1, 2) select a from t",
            False,
            "bare",
        ),
        ('WITH RECURSIVE "n s" AS (SELECT 1) SELECT 1', 'WITH RECURSIVE "n s" AS (SELECT 1) SELECT 1', False, "bare"),
        (
            "WITH c AS NOT MATERIALIZED (SELECT 1) SELECT * FROM c",
            "WITH c AS NOT MATERIALIZED (SELECT 1) SELECT * FROM c",
            False,
            "bare",
        ),
        ("With the given schema, the singers can be counted.", None, False, "none"),
        ("With this in mind: SELECT name FROM singer", "SELECT name FROM singer", False, "bare"),
        ("<think>I should SELECT the name</think> no answer", None, False, "none"),
        ("", None, False, "none"),
        ("I don't know", None, False, "none"),
    ],
)
def test_extract(text: str, sql: str | None, format_ok: bool, source: str) -> None:
    result = extract(text)
    assert (result.sql, result.format_ok, result.source) == (sql, format_ok, source)
    assert (result.problem is None) == format_ok


def test_megabyte_of_unbalanced_tags_is_linear() -> None:
    unclosed_ctes = ("with " * 200_000, 'with "' * 150_000, "with a (" * 120_000, "with a AS" * 100_000)
    for text in ("<think>" * 150_000, "<sql>" * 150_000, "<think>a</think>" * 60_000, "```" * 300_000, *unclosed_ctes):
        result = extract(text)
        assert not result.format_ok


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("<>/thinksql` \nSELECT1;()'\"")), max_size=200) | st.text(max_size=200))
def test_extract_never_raises(text: str) -> None:
    result = extract(text)
    assert result.format_ok == (result.source == "tags" and result.problem is None)
    assert result.sql is None or result.sql.strip() == result.sql
