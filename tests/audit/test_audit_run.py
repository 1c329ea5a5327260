"""The audit as a whole: planted faults are caught, nothing is written to the database, no
temporary copy survives, the filter sets and the command behave as documented."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.audit import audit_examples
from progress_sql.audit.copies import PerturbedCopies
from progress_sql.audit.filters import FILTER_SETS, apply_filter, write_dropped
from progress_sql.cli import app
from progress_sql.errors import ConfigError
from progress_sql.types import Example
from tests.conftest import build_database

#: Planted faults (issue 7): each gold must be caught by the named check.
PLANTED = (
    ("Who is the oldest singer?", "SELECT name FROM singer ORDER BY age DESC LIMIT 1", "G07"),
    ("Which singer, and how many singers are there?", "SELECT name, count(*) FROM singer", "G12"),
    ("Which singers come from France?", "SELECT name FROM singer WHERE country = 'france'", "G14"),
    (
        "What share of singers is over 30?",
        "SELECT count(*) / (SELECT count(*) FROM singer) FROM singer WHERE age > 30",
        "G13",
    ),
    ("Which singers are older than 100?", "SELECT name FROM singer WHERE age > 100", "G03"),
)
CLEAN = ("How many singers are there?", "SELECT count(*) FROM singer")


def _examples(db: Path) -> list[Example]:
    pairs = [(q, sql) for q, sql, _ in PLANTED] + [CLEAN]
    return [Example(i, q, "audit", str(db), sql) for i, (q, sql) in enumerate(pairs)]


def _fingerprint(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_mtime_ns, stat.st_size


def test_planted_faults_are_caught(audit_db: Path) -> None:
    records = audit_examples(_examples(audit_db))
    for record, (_q, _sql, check_id) in zip(records, PLANTED, strict=False):
        assert check_id in record.fired, record
    assert records[-1].fired == ()
    assert all(not r.errors for r in records)


def test_audit_is_read_only_and_leaves_no_temporary_copy(tmp_path: Path) -> None:
    db = build_database("audit.sql", tmp_path / "database")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    before = _fingerprint(db)
    files_before = sorted(p.name for p in db.parent.iterdir())
    # Two databases and two workers: the parallel path, with copies built in the worker processes.
    other = build_database("audit.sql", tmp_path / "other")
    examples = _examples(db) + [Example(99, q, "other", str(other), sql) for q, sql, _ in PLANTED]
    records = audit_examples(examples, workers=2, scratch_dir=scratch)
    assert "G12" in records[1].fired
    assert "G12" in records[-4].fired
    assert _fingerprint(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == files_before  # no journal, no -wal
    assert list(scratch.iterdir()) == []


def test_copies_are_removed_when_a_check_raises(audit_db: Path, tmp_path: Path) -> None:
    def audit_and_fail() -> None:
        with PerturbedCopies(audit_db, tmp_path) as copies:
            assert copies.path("reversed").is_file()
            raise RuntimeError("a check failed")

    with pytest.raises(RuntimeError, match="a check failed"):
        audit_and_fail()
    assert list(tmp_path.iterdir()) == []


def test_copy_keeps_rows_and_schema_but_not_order(audit_db: Path, tmp_path: Path) -> None:
    import sqlite3

    with PerturbedCopies(audit_db, tmp_path) as copies:
        original = sqlite3.connect(audit_db)
        copy = sqlite3.connect(copies.path("reversed"))
        schema = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
        assert copy.execute(schema).fetchall() == original.execute(schema).fetchall()
        for table in ("singer", "song", "player"):
            rows = f"SELECT * FROM {table} ORDER BY 1"
            assert copy.execute(rows).fetchall() == original.execute(rows).fetchall()
        scan = copies.run("reversed", "SELECT name FROM singer", __import__("progress_sql").execution.ExecLimits())
        assert [r[0] for r in scan.rows] == ["Eve", "Dan", "Cid", "Bea", "Ann", "Joe"]
        original.close()
        copy.close()


def test_rl_default_and_strict_filters(audit_db: Path, tmp_path: Path) -> None:
    examples = _examples(audit_db)
    assert FILTER_SETS["none"].checks == ()
    assert apply_filter(examples, "none").kept == tuple(examples)
    default = apply_filter(examples, "rl-default")
    assert {d.index for d in default.dropped} == {1, 2, 4}  # row order; empty (the case-mismatched literal too)
    strict = apply_filter(examples, "strict")
    assert {d.index for d in strict.dropped} == {0, 1, 2, 4}  # and the tie at LIMIT 1
    assert strict.dropped[0].reasons[0].startswith("G07 tie-at-limit: ")
    assert len(strict.kept) + len(strict.dropped) == len(examples)
    write_dropped(strict, tmp_path / "dropped.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "dropped.jsonl").read_text().splitlines()]
    assert [line["index"] for line in lines] == [0, 1, 2, 4]
    assert set(lines[0]) == {"index", "db_id", "question", "gold_sql", "reasons"}


def test_unknown_filter_set_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown filter set 'lenient'; choose one of none, rl-default, strict"):
        apply_filter([], "lenient")


def test_examples_without_database_pass_execution_filters(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere" / "nowhere.sqlite")
    empty = Example(0, "q", "nowhere", missing, "SELECT name FROM singer WHERE 0")
    random_gold = Example(1, "q", "nowhere", missing, "SELECT name FROM singer ORDER BY random() LIMIT 1")
    assert apply_filter([empty, random_gold], "rl-default").kept == (empty, random_gold)
    strict = apply_filter([empty, random_gold], "strict")  # G11 is static: it still applies
    assert strict.kept == (empty,)
    assert strict.dropped[0].reasons[0].startswith("G11")
    (record,) = audit_examples([empty])
    assert record.gold_status == "missing-db"
    assert not record.db_available


def test_audit_command_writes_records_report_and_plot(audit_db: Path, tmp_path: Path) -> None:
    questions = tmp_path / "questions.json"
    items = [{"db_id": "audit", "question": q, "query": sql} for q, sql, _ in PLANTED]
    questions.write_text(json.dumps(items), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["audit", "--task", str(questions), "--data-dir", str(audit_db.parent.parent.parent), "--out", str(out),
         "--checks", "G03,tie-at-limit,G14", "--workers", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert {k: v["fired"] for k, v in summary["checks"].items()} == {"G03": 2, "G07": 1, "G14": 1}
    assert summary["per_database"]["audit"] == {"examples": 5, "fired": {"G03": 2, "G07": 1, "G14": 1}}
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert records[2]["findings"][-1]["evidence"].endswith("stored as 'France'")
    report = (out / "report.md").read_text()
    assert "## G07 tie-at-limit (1)" in report
    assert "last kept row" in report
    assert (out / "counts.png").stat().st_size > 0


def test_audit_command_rejects_unknown_checks(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["audit", "--task", "spider-dev", "--data-dir", str(tmp_path), "--checks", "G99"])
    assert result.exit_code == 2
    assert "unknown audit check 'G99'" in result.output
