"""Invariants of the audit on arbitrary input: a gold is data, so no check may raise on it, and the
filters partition their input."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from progress_sql.audit import audit_examples
from progress_sql.audit.filters import apply_filter
from progress_sql.types import Example

_FRAGMENTS = st.sampled_from(
    [
        "SELECT", "name", "count(*)", "FROM", "singer", "song AS T2", "JOIN", "ON", "T1.singer_id = T2.singer_id",
        "WHERE", "age", ">", "=", "'France'", '"france"', "30", "1 / 2", "GROUP BY", "country", "ORDER BY",
        "DESC", "LIMIT", "1", "OFFSET", "DISTINCT", "UNION", "(", ")", ",", "max(age)", "random()", "*", "IN",
    ]
)  # fmt: skip
_SQL = st.one_of(st.lists(_FRAGMENTS, max_size=14).map(" ".join), st.text(max_size=60))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sql=_SQL, question=st.text(max_size=40))
def test_no_check_raises_on_arbitrary_gold(audit_db: Path, sql: str, question: str) -> None:
    (record,) = audit_examples([Example(0, question, "audit", str(audit_db), sql)], timeout_s=1.0)
    assert record.errors == ()
    assert set(record.fired) <= {f.check for f in record.findings}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sqls=st.lists(_SQL, max_size=5), name=st.sampled_from(["none", "rl-default", "strict"]))
def test_filters_partition_their_input(audit_db: Path, sqls: list[str], name: str) -> None:
    examples = [Example(i, "q", "audit", str(audit_db), sql) for i, sql in enumerate(sqls)]
    outcome = apply_filter(examples, name, timeout_s=1.0)
    assert len(outcome.kept) + len(outcome.dropped) == len(examples)
    assert sorted([e.index for e in outcome.kept] + [d.index for d in outcome.dropped]) == list(range(len(sqls)))
    assert all(d.reasons for d in outcome.dropped)
