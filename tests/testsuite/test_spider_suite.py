"""A small seeded suite for three Spider dev databases, built through ``progress-sql build-suite``:
gold scores 100% TS, neighbour coverage is high, TS is below EX for each of the five published
systems, every suite database passes the integrity checks (voter_1's invalid foreign key is reported
and exempted) and a rebuild gives the same bytes."""

from __future__ import annotations

import json
import sqlite3
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.evaluation.predictions import load_predictions
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.testsuite.manifest import suite_lookup
from progress_sql.types import Example

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

DATABASES = ("concert_singer", "employee_hire_evaluation", "voter_1")
SETTINGS = ("--seed", "0", "--pool", "8", "--max-dbs", "6", "--workers", "1")


def _build(shared_data: Path, out: Path, *databases: str) -> dict:  # type: ignore[type-arg]
    chosen = [arg for db in databases for arg in ("--db", db)]
    result = CliRunner().invoke(
        app,
        ["build-suite", "--task", "spider-dev", "--data-dir", str(shared_data / "spider"), "--out", str(out),
         *SETTINGS, *chosen, "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary: dict = json.loads(result.stdout)  # type: ignore[type-arg]
    return summary


@pytest.fixture(scope="module")
def suite(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("spider_suite")
    _build(shared_data, out, *DATABASES)
    return out


@pytest.fixture(scope="module")
def examples(spider_dev: list[Example]) -> list[Example]:
    return [e for e in spider_dev if e.db_id in DATABASES]


def test_gold_as_prediction_scores_full_ts(examples: list[Example], suite: Path, pool: ExecutionPool) -> None:
    store = GoldStore(get_preset("spider"), pool=pool, suite=suite_lookup(suite))
    records = evaluate(examples, [[Sample(e.gold_sql)] for e in examples], store)
    assert len(records) == 98  # 45 + 38 + 15 examples
    assert all(r.ts_match for r in records)
    assert sum(r.ts_databases for r in records) > len(records)


def test_neighbour_coverage(examples: list[Example], suite: Path) -> None:
    manifest = json.loads((suite / "manifest.json").read_text())
    golds = {(db, g["sql"]): g for db, entry in manifest["databases"].items() for g in entry["golds"]}
    per_example = [golds[(e.db_id, e.gold_sql)]["coverage"] for e in examples]
    assert statistics.fmean(v for v in per_example if v is not None) >= 0.9
    assert manifest["coverage"]["mean"] >= 0.9
    assert all(g["problem"] is None for g in golds.values())


def test_ts_is_below_ex_for_every_published_system(
    shared_data: Path, spider_dev: list[Example], examples: list[Example], suite: Path, pool: ExecutionPool
) -> None:
    folder = shared_data / "predictions" / "spider-dev"
    cache = GoldCache()
    for model in range(1, 6):
        predictions = load_predictions(folder / f"model_{model}.txt", len(spider_dev))
        samples = [[Sample(predictions[e.index])] for e in examples]
        store = GoldStore(get_preset("spider"), pool=pool, cache=cache, suite=suite_lookup(suite))
        records = evaluate(examples, samples, store)
        ex = sum(r.match for r in records)
        ts = sum(bool(r.ts_match) for r in records)
        assert all(r.match for r in records if r.ts_match)  # TS never accepts what EX rejects
        assert ts < ex, f"model_{model}: EX {ex}, TS {ts}"


def test_suite_databases_pass_the_integrity_checks(suite: Path) -> None:
    manifest = json.loads((suite / "manifest.json").read_text())
    assert list(manifest["databases"]["voter_1"]["invalid_foreign_keys"]) == ["VOTES"]
    for db_id in DATABASES:
        files = sorted((suite / db_id).glob("*.sqlite"))
        assert [f.name for f in files] == sorted(manifest["databases"][db_id]["suite"])
        assert files
        for path in files:
            with sqlite3.connect(path) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
                if db_id != "voter_1":
                    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_rebuild_is_byte_identical(shared_data: Path, suite: Path, tmp_path: Path) -> None:
    _build(shared_data, tmp_path, "concert_singer")
    rebuilt = sorted((tmp_path / "concert_singer").glob("*.sqlite"))
    assert rebuilt
    for path in rebuilt:
        assert path.read_bytes() == (suite / "concert_singer" / path.name).read_bytes()
