"""Neighbour queries: one edit each, on the syntax tree, deterministic."""

from __future__ import annotations

from progress_sql.data.schema import Schema
from progress_sql.testsuite.neighbors import MAX_NEIGHBOURS, neighbour_candidates

SCHEMA = Schema.from_mapping(
    {"member": ["member_id", "name", "age", "country", "club_id"], "club": ["club_id", "name", "city"]}
)


def test_every_kind_of_edit_appears() -> None:
    gold = (
        "SELECT T1.name, count(*) FROM member AS T1 JOIN club AS T2 ON T1.club_id = T2.club_id "
        "WHERE T1.age > 20 AND T2.city LIKE '%Par%' AND T1.country IN ('France', 'Spain') "
        "GROUP BY T1.name HAVING max(T1.age) < 40 ORDER BY T1.name ASC LIMIT 3"
    )
    found = set(neighbour_candidates(gold, SCHEMA))
    head = "SELECT T1.name, COUNT(*) FROM member AS T1 JOIN club AS T2 ON T1.club_id = T2.club_id"
    where = "WHERE T1.age > 20 AND T2.city LIKE '%Par%' AND T1.country IN ('France', 'Spain')"
    tail = "GROUP BY T1.name HAVING MAX(T1.age) < 40 ORDER BY T1.name ASC LIMIT 3"
    expected = {
        # drop a clause
        f"{head} {tail}",
        f"{head} {where} HAVING MAX(T1.age) < 40 ORDER BY T1.name ASC LIMIT 3",
        f"{head} {where} GROUP BY T1.name ORDER BY T1.name ASC LIMIT 3",
        f"{head} {where} GROUP BY T1.name HAVING MAX(T1.age) < 40 LIMIT 3",
        f"{head} {where} GROUP BY T1.name HAVING MAX(T1.age) < 40 ORDER BY T1.name ASC",
        # drop a condition, swap AND / OR
        f"{head} WHERE T1.age > 20 AND T2.city LIKE '%Par%' {tail}",
        f"{head} WHERE T1.age > 20 AND T2.city LIKE '%Par%' OR T1.country IN ('France', 'Spain') {tail}",
        f"{head} WHERE (T1.age > 20 OR T2.city LIKE '%Par%') AND T1.country IN ('France', 'Spain') {tail}",
        # swap a comparison, an aggregate, the order, LIKE / NOT LIKE, IN / NOT IN
        f"{head} {where.replace('T1.age > 20', 'T1.age >= 20')} {tail}",
        f"{head} {where} {tail.replace('MAX(T1.age)', 'MIN(T1.age)')}",
        f"{head} {where} {tail.replace('T1.name ASC', 'T1.name DESC NULLS FIRST')}",  # nulls stay first
        f"{head} {where.replace('T2.city LIKE', 'NOT T2.city LIKE')} {tail}",
        f"{head} {where.replace('T1.country IN', 'NOT T1.country IN')} {tail}",
        # replace a column (same table), perturb literals
        f"{head} {where.replace('T1.age > 20', 'T1.club_id > 20')} {tail}",
        f"{head} {where.replace('> 20', '> 21')} {tail}",
        head + " " + where.replace("'%Par%'", "'Par'") + " " + tail,
        head + " " + where.replace("'France'", "'france'") + " " + tail,
        # drop a selected column
        f"SELECT COUNT(*) FROM member AS T1 JOIN club AS T2 ON T1.club_id = T2.club_id {where} {tail}",
    }
    assert expected <= found
    assert len(found) <= MAX_NEIGHBOURS


def test_set_operations_and_double_quoted_literals() -> None:
    gold = 'SELECT name FROM member WHERE country = "France" INTERSECT SELECT name FROM club'
    found = neighbour_candidates(gold, SCHEMA)
    assert "SELECT name FROM member WHERE country = 'France' UNION SELECT name FROM club" in found
    assert "SELECT name FROM member WHERE country = 'France' EXCEPT SELECT name FROM club" in found
    assert "SELECT name FROM member WHERE country = 'Franc' INTERSECT SELECT name FROM club" in found


def test_deterministic_and_never_the_gold() -> None:
    gold = "SELECT name FROM member WHERE age BETWEEN 18 AND 30 ORDER BY age DESC"
    first = neighbour_candidates(gold, SCHEMA)
    assert first == neighbour_candidates(gold, SCHEMA)
    assert "SELECT name FROM member WHERE age BETWEEN 18 AND 30 ORDER BY age DESC" not in first
    assert len(first) == len(set(first)) > 10


def test_no_column_swap_inside_count() -> None:
    found = neighbour_candidates("SELECT count(name) FROM member WHERE age > 3", SCHEMA)
    assert [q for q in found if q.startswith("SELECT COUNT(")] == [
        q for q in found if q.startswith("SELECT COUNT(name)")
    ]
    assert "SELECT SUM(name) FROM member WHERE age > 3" in found


def test_unparsable_gold_has_no_neighbours() -> None:
    assert neighbour_candidates("SELEC name FROM", SCHEMA) == []
