"""The gold cache: keyed by file content, SQL and preset; on disk across runs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from progress_sql.data.loaders import database_path
from progress_sql.execution.executor import DEFAULT_LIMITS
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache, cache_key, normalize_sql
from progress_sql.judge.compare import describe, get_preset
from progress_sql.judge.gold import gold_results
from progress_sql.types import Example, ExecResult


def _examples(root: Path, count: int) -> list[Example]:
    return [
        Example(i, "q", "compare", str(database_path(root, "compare")), "SELECT name FROM singer ORDER BY age")
        for i in range(count)
    ]


def _layout(tmp_path: Path, make_database: Any) -> Path:
    root = tmp_path / "database"
    make_database("compare.sql", root)
    return root


def test_a_gold_runs_once_for_many_examples(tmp_path: Path, make_database: Any, pool: ExecutionPool) -> None:
    root = _layout(tmp_path, make_database)
    cache = GoldCache()
    results = gold_results(_examples(root, 5), get_preset("spider"), pool, cache=cache)
    assert len(cache) == 1
    assert cache.misses == 1
    assert all(r[0].rows == results[0][0].rows for r in results)


def test_disk_cache_survives_and_keys_on_content(tmp_path: Path, make_database: Any, pool: ExecutionPool) -> None:
    root = _layout(tmp_path, make_database)
    preset = get_preset("strict")
    first = GoldCache(tmp_path / "cache")
    gold_results(_examples(root, 2), preset, pool, cache=first)
    second = GoldCache(tmp_path / "cache")
    again = gold_results(_examples(root, 2), preset, pool, cache=second)
    assert second.misses == 0
    assert again[0][0].ok
    # Same content under another path: same key. Different content: different key.
    copy = tmp_path / "copy.sqlite"
    shutil.copy(database_path(root, "compare"), copy)
    sql, described = "SELECT 1", describe(preset)
    assert cache_key(copy, sql, described, DEFAULT_LIMITS) == cache_key(
        database_path(root, "compare"), sql, described, DEFAULT_LIMITS
    )
    copy.write_bytes(copy.read_bytes() + b"\0")
    assert cache_key(copy, sql, described, DEFAULT_LIMITS) != cache_key(
        database_path(root, "compare"), sql, described, DEFAULT_LIMITS
    )
    other = describe(get_preset("spider"))
    assert cache_key(copy, sql, described, DEFAULT_LIMITS) != cache_key(copy, sql, other, DEFAULT_LIMITS)


def test_blobs_and_floats_round_trip_on_disk(tmp_path: Path) -> None:
    cache = GoldCache(tmp_path)
    result = ExecResult("ok", columns=("a", "b", "c"), rows=((b"\x00\xff", 0.1 + 0.2, None),))
    cache.put("ab" * 32, result)
    assert GoldCache(tmp_path).get("ab" * 32) == result


def test_normalize_sql_keeps_literals() -> None:
    assert normalize_sql("SELECT\n a  FROM t WHERE b='A  B';") == "SELECT a FROM t WHERE b='A  B'"
