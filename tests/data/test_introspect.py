"""The one database reader: tables and views, keys, value samples, row counts and errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from progress_sql.data.introspect import (
    ForeignKey,
    ValueSample,
    column_kind,
    date_format,
    quote_identifier,
    read_profile,
)
from progress_sql.data.schema import Schema, read_schema
from progress_sql.errors import DatasetError
from tests.conftest import build_database


@pytest.fixture
def schema_db(tmp_path: Path) -> Path:
    return build_database("fuzz_schema.sql", tmp_path)


def _database(tmp_path: Path, script: str) -> Path:
    path = tmp_path / "odd.sqlite"
    connection = sqlite3.connect(path)
    connection.executescript(script)
    connection.close()
    return path


def test_structure_without_samples(schema_db: Path) -> None:
    profile = read_profile(schema_db)
    assert list(profile.tables) == ["dept", "emp", "assignment", "review", "audit"]  # creation order, no view
    assert len(profile.ddl) == 7
    assert profile.ddl[-2].startswith("CREATE VIEW busy")
    assert [t.split(" ON ")[0] for t in profile.triggers] == ["CREATE TRIGGER emp_audit AFTER UPDATE"]
    emp = profile.tables["emp"]
    assert emp.column("NAME") is emp.columns[1]
    assert [(c.name, c.declared, c.notnull, c.primary_key) for c in emp.columns[:3]] == [
        ("emp_id", "INTEGER", False, True),
        ("name", "TEXT", True, False),
        ("dept_id", "INTEGER", True, False),
    ]
    assert emp.foreign_keys == (
        ForeignKey(("manager_id",), "emp", ("emp_id",)),
        ForeignKey(("dept_id",), "dept", ("dept_id",)),
    )
    assert profile.tables["assignment"].primary_key == ("emp_id", "project")
    assert ("name",) in profile.tables["dept"].uniques
    assert all(c.values == () and c.distinct is None for t in profile.tables.values() for c in t.columns)
    assert all(t.rows is None for t in profile.tables.values())


def test_key_columns_are_both_ends_of_foreign_keys_and_primary_keys(schema_db: Path) -> None:
    profile = read_profile(schema_db)
    keys = {(t.name, c.name) for t in profile.tables.values() for c in t.columns if c.key}
    assert keys == {
        ("dept", "dept_id"), ("emp", "emp_id"), ("emp", "dept_id"), ("emp", "manager_id"),
        ("assignment", "emp_id"), ("assignment", "project"),
    }  # fmt: skip


def test_views_are_read_when_asked_with_columns_only(schema_db: Path) -> None:
    profile = read_profile(schema_db, ValueSample(5), views=True, row_counts=True)
    busy = profile.tables["busy"]
    assert busy.is_view
    assert not busy.has_rowid
    assert [c.name for c in busy.columns] == ["emp_id", "total"]
    assert busy.rows is None
    assert all(c.values == () for c in busy.columns)
    assert list(profile.tables).index("busy") == 4  # among the tables, in creation order
    assert read_schema(schema_db) == Schema.from_profile(profile)
    assert read_schema(schema_db).tables["busy"] == ("emp_id", "total")


def test_value_samples_and_counts(schema_db: Path) -> None:
    first = read_profile(schema_db, ValueSample(3, "first_rows"), row_counts=True).tables["emp"]
    assert first.rows == 5
    assert first.column("note").values == ("lead", None, 7)  # NULLs kept, rowid order
    distinct = read_profile(schema_db, ValueSample(10, "distinct")).tables["emp"]
    assert sorted(map(str, distinct.column("note").values)) == ["7", "lead", "remote"]
    ordered = read_profile(schema_db, ValueSample(2, "distinct_sorted", count_distinct=True)).tables["emp"]
    assert ordered.column("name").values == ("Iris", "Jon")
    assert ordered.column("name").distinct == 5
    assert ordered.column("hired").kind == "date"
    assert ordered.column("hired").date_format == "%Y-%m-%d"
    assert ordered.column("active").kind == "boolean"


def test_composite_and_parentless_foreign_keys_and_without_rowid(tmp_path: Path) -> None:
    path = _database(
        tmp_path,
        """
        CREATE TABLE block (floor INTEGER, code TEXT, PRIMARY KEY (floor, code)) WITHOUT ROWID;
        CREATE TABLE room (id INTEGER PRIMARY KEY, floor INTEGER, code TEXT,
                           FOREIGN KEY (floor, code) REFERENCES block (floor, code));
        CREATE TABLE visit (room INTEGER REFERENCES room);
        """,
    )
    profile = read_profile(path)
    assert not profile.tables["block"].has_rowid
    assert profile.tables["room"].foreign_keys == (ForeignKey(("floor", "code"), "block", ("floor", "code")),)
    # No parent columns declared: SQLite means the parent's primary key; the record says none were named.
    assert profile.tables["visit"].foreign_keys == (ForeignKey(("room",), "room", ()),)


def test_unreadable_files_are_dataset_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="database file not found"):
        read_profile(tmp_path / "missing.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DatasetError, match="not a readable SQLite database"):
        read_profile(junk)


def test_quote_identifier() -> None:
    assert quote_identifier('a"b') == '"a""b"'
    assert quote_identifier("odd table") == '"odd table"'


def test_date_layouts_and_column_kinds() -> None:
    assert date_format(("2020-01-31", "1999-12-01")) == "%Y-%m-%d"
    assert date_format(("2020-01-31", "soon")) is None
    assert column_kind("INTEGER", (1, 2)) == ("integer", None)
    assert column_kind("varchar(20)", ("2001-02-03",)) == ("date", "%Y-%m-%d")
    assert column_kind("bool", ("T", "F")) == ("boolean", None)
