"""Schema rendering for prompts (db_details) from real SQLite files built by the tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from progress_sql.data.ddl import db_details, sample_text
from progress_sql.data.introspect import ValueSample, read_profile
from progress_sql.errors import DatasetError


def test_full_profile_has_types_keys_and_samples(music_dir: Path) -> None:
    db = music_dir / "database" / "music" / "music.sqlite"
    text = db_details(db)
    assert text.startswith("CREATE TABLE singer (\n  singer_id INTEGER, -- examples: 1, 2, 3")
    assert "  name TEXT, -- examples: 'Joe Sharp', 'Timbaland', 'Justin Brown'" in text
    assert "PRIMARY KEY (concert_id, singer_id)" in text
    assert "FOREIGN KEY (stadium_id) REFERENCES stadium(stadium_id)" in text
    assert "'Stark''s Park'" in text  # quotes inside samples are escaped as in SQL
    assert text.count("CREATE TABLE") == 4
    assert db_details(db) == text  # deterministic for a given file


def test_compact_and_none_profiles(music_dir: Path) -> None:
    db = music_dir / "database" / "music" / "music.sqlite"
    assert db_details(db, "compact").splitlines()[0] == "singer(singer_id, name, country, age)"
    assert db_details(db, "none") == ""


def test_long_strings_blobs_and_tables_without_keys_are_rendered(tmp_path: Path) -> None:
    db = tmp_path / "odd.sqlite"
    connection = sqlite3.connect(db)
    connection.execute('CREATE TABLE "odd table" (note TEXT, payload BLOB)')
    connection.execute('INSERT INTO "odd table" VALUES (?, ?)', ("x" * 500 + "\nline", b"\x00\x01\x02"))
    connection.commit()
    connection.close()
    (table,) = read_profile(db, ValueSample(3, "distinct")).tables.values()
    assert tuple(map(sample_text, table.columns[0].values)) == ("'" + "x" * 37 + "...'",)
    assert tuple(map(sample_text, table.columns[1].values)) == ("<blob 3 bytes>",)
    assert db_details(db).endswith("  payload BLOB -- examples: <blob 3 bytes>\n);")


def test_missing_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="database file not found"):
        db_details(tmp_path / "nope.sqlite")
