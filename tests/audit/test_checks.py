"""Every check fires on a gold written to trigger it and stays silent on a close variant, on a real
SQLite database built from tests/fixtures/sql/audit.sql."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.audit import CHECKS, audit_examples
from progress_sql.types import Example

_RECURSIVE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) SELECT {select} FROM c"

#: check id -> ((question, firing gold), (question, non-firing gold)).
CASES: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {
    "G01": (("Names?", "SELECT nme FROM singer"), ("Names?", "SELECT name FROM singer")),
    "G02": (
        ("Count to a billion.", _RECURSIVE.format(n=10**9, select="count(*)")),
        ("Count to ten.", _RECURSIVE.format(n=10, select="count(*)")),
    ),
    "G03": (
        ("Very old singers?", "SELECT name FROM singer WHERE age > 200"),
        ("Adults?", "SELECT name FROM singer WHERE age > 20"),
    ),
    "G04": (
        ("Mean age of very old singers?", "SELECT avg(age) FROM singer WHERE age > 200"),
        ("Mean age?", "SELECT avg(age) FROM singer"),
    ),
    "G05": (
        ("How many very old singers?", "SELECT count(*) FROM singer WHERE age > 200"),
        ("How many singers?", "SELECT count(*) FROM singer"),
    ),
    "G06": (
        ("A singer?", "SELECT name FROM singer LIMIT 1"),
        ("Youngest singer?", "SELECT name FROM singer ORDER BY age LIMIT 1"),
    ),
    "G07": (
        ("Top two players?", "SELECT name FROM player ORDER BY score DESC LIMIT 2"),
        ("Top player?", "SELECT name FROM player ORDER BY score DESC LIMIT 1"),
    ),
    "G08": (
        ("Youngest singer?", "SELECT name FROM singer ORDER BY age LIMIT 1"),
        ("Youngest singer?", "SELECT name FROM singer WHERE age IS NOT NULL ORDER BY age LIMIT 1"),
    ),
    "G09": (
        ("Tallest singer?", "SELECT name FROM singer ORDER BY height_text DESC LIMIT 1"),
        ("Youngest by birth year?", "SELECT name FROM singer ORDER BY birth_year DESC LIMIT 1"),
    ),
    "G10": (
        ("Name and number of singers?", "SELECT name, count(*) FROM singer"),
        ("Singers per country?", "SELECT country, count(*) FROM singer GROUP BY country"),
    ),
    "G11": (
        ("Singers born before this year?", "SELECT name FROM singer WHERE birth_year < strftime('%Y', 'now')"),
        ("Singers born before 2020?", "SELECT name FROM singer WHERE birth_year < strftime('%Y', '2020-01-01')"),
    ),
    "G12": (
        ("A singer and the number of singers?", "SELECT name, count(*) FROM singer"),
        ("Number of singers?", "SELECT count(*) FROM singer"),
    ),
    "G13": (
        ("Share of singers over 30?", "SELECT count(*) / (SELECT count(*) FROM singer) FROM singer WHERE age > 30"),
        (
            "Share of singers over 30?",
            "SELECT CAST(count(*) AS REAL) / (SELECT count(*) FROM singer) FROM singer WHERE age > 30",
        ),
    ),
    "G14": (
        ("Singers from France?", "SELECT name FROM singer WHERE country = 'france'"),
        ("Singers from France?", "SELECT name FROM singer WHERE country = 'France'"),
    ),
    "G15": (
        ("Singers from Atlantis?", "SELECT name FROM singer WHERE country = 'Atlantis'"),
        ("Singers from Spain?", "SELECT name FROM singer WHERE country = 'Spain'"),
    ),
    "G16": (
        ("Singers older than 30?", "SELECT name FROM singer WHERE age >= 30"),
        ("Singers older than 30?", "SELECT name FROM singer WHERE age > 30"),
    ),
    "G17": (
        ("List all singers with the highest age.", "SELECT name FROM singer ORDER BY age DESC LIMIT 1"),
        ("Who is the oldest singer?", "SELECT name FROM singer ORDER BY age DESC LIMIT 1"),
    ),
    "G18": (
        ("Countries of singers?", "SELECT country FROM singer"),
        ("Countries of singers?", "SELECT DISTINCT country FROM singer"),
    ),
    "G19": (
        (
            "How many songs do singers have?",
            "SELECT count(*) FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id "
            "JOIN song AS T3 ON T1.singer_id = T3.singer_id",
        ),
        (
            "How many songs do singers have?",
            "SELECT count(*) FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id",
        ),
    ),
    "G20": (("Mean net worth?", "SELECT avg(net_worth) FROM singer"), ("Oldest age?", "SELECT max(age) FROM singer")),
    "G21": (
        ("Everything about singers.", "SELECT * FROM singer"),
        ("How many singers?", "SELECT count(*) FROM singer"),
    ),
    "G22": (
        ("Numbers to 10001.", _RECURSIVE.format(n=10_001, select="x")),
        ("Numbers to 10.", _RECURSIVE.format(n=10, select="x")),
    ),
    "G23": (
        ("Names twice.", "SELECT name, name FROM singer"),
        ("Names and countries.", "SELECT name, country FROM singer"),
    ),
    "G24": (
        ("Which countries?", "SELECT DISTINCT country FROM singer"),
        ("Which names?", "SELECT DISTINCT name FROM singer"),
    ),
}


def _example(db: Path, question: str, sql: str, index: int = 0) -> Example:
    return Example(index=index, question=question, db_id="audit", db_path=str(db), gold_sql=sql)


def test_every_registered_check_has_cases() -> None:
    assert sorted(CASES) == sorted(CHECKS)


@pytest.mark.parametrize("check_id", sorted(CASES))
def test_check_fires_on_its_gold_and_not_on_the_variant(check_id: str, audit_db: Path) -> None:
    (fire_q, fire_sql), (quiet_q, quiet_sql) = CASES[check_id]
    fired, quiet = audit_examples(
        [_example(audit_db, fire_q, fire_sql, 0), _example(audit_db, quiet_q, quiet_sql, 1)], [check_id], timeout_s=1.0
    )
    assert fired.fired == (check_id,), fired
    assert fired.findings[0].evidence
    assert quiet.fired == (), quiet
    assert not fired.errors
    assert not quiet.errors


@pytest.mark.parametrize("check_id", sorted(CHECKS))
def test_docstring_names_a_firing_and_a_quiet_example(check_id: str) -> None:
    doc = " ".join((CHECKS[check_id].function.__doc__ or "").split())
    assert "Fires:" in doc
    assert "Does not fire:" in doc


def test_degenerate_result_found_through_neighbour_queries(audit_db: Path) -> None:
    """G05's second part: most single-edit neighbours give the gold's result on this database."""
    nowhere = "SELECT name FROM singer WHERE age > 20 AND country = 'Atlantis'"
    golds = (nowhere, "SELECT name FROM singer WHERE age > 20")
    fired, quiet = audit_examples([_example(audit_db, "Who?", sql, i) for i, sql in enumerate(golds)], ["G05"])
    assert fired.fired == ("G05",)
    assert "neighbours return the same result" in fired.findings[0].evidence
    assert quiet.fired == ()


def test_bare_column_grouped_by_a_key_through_a_join_is_allowed(audit_db: Path) -> None:
    sql = (
        "SELECT T1.name, count(*) FROM singer AS T1 JOIN song AS T2 ON T1.singer_id = T2.singer_id "
        "GROUP BY T2.singer_id"
    )
    (record,) = audit_examples([_example(audit_db, "Songs per singer?", sql)], ["G10"])
    assert record.fired == ()


def test_double_quoted_literal_is_checked_as_a_string(audit_db: Path) -> None:
    (record,) = audit_examples(
        [_example(audit_db, "From France?", 'SELECT name FROM singer WHERE country = "france"')], ["G14"]
    )
    assert record.fired == ("G14",)
    assert "'France'" in record.findings[0].evidence


def test_tie_in_a_limit_subquery_is_found(audit_db: Path) -> None:
    sql = "SELECT count(*) FROM singer WHERE name = (SELECT name FROM singer ORDER BY age DESC LIMIT 1)"
    (record,) = audit_examples([_example(audit_db, "Is the oldest singer unique?", sql)], ["G07"])
    assert record.fired == ("G07",)


def test_docs_catalogue_table_is_current() -> None:
    from progress_sql.audit.report import catalogue_table
    from tests.conftest import REPO_ROOT

    assert catalogue_table() in (REPO_ROOT / "docs" / "audit.md").read_text(encoding="utf-8")


def test_case_mismatch_is_found_behind_an_absent_literal(audit_db: Path) -> None:
    sql = "SELECT name FROM singer WHERE country = 'Atlantis' OR country = 'spain'"
    (record,) = audit_examples([_example(audit_db, "From Atlantis or Spain?", sql)], ["G14", "G15"])
    assert record.fired == ("G14", "G15")
    assert record.findings[0].evidence.endswith("stored as 'Spain'")
    assert "'Atlantis'" in record.findings[1].evidence


def test_every_check_a_family_defines_is_in_its_list() -> None:
    """The catalogue is the families' explicit ``CHECKS`` tuples: a check defined and not listed would
    silently never run."""
    from progress_sql.audit import perturbation, single, static
    from progress_sql.audit.check import Check

    for family in (single, static, perturbation):
        defined = {value.id for value in vars(family).values() if isinstance(value, Check)}
        assert defined == {c.id for c in family.CHECKS}, family.__name__
    assert len(CHECKS) == len(single.CHECKS) + len(static.CHECKS) + len(perturbation.CHECKS)
