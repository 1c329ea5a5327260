"""`progress-sql split`: schema-disjoint splits (no database and no schema fingerprint in two
splits), deterministic for a seed, on Spider train + dev and BIRD dev; and the pure core."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.data.fingerprint import schema_fingerprint
from progress_sql.data.splits import split_by_database
from progress_sql.data.tasks import load_task
from progress_sql.types import Example

runner = CliRunner()


def _split(spec: Path, out: Path, seed: int) -> list[dict[str, Any]]:
    result = runner.invoke(app, ["split", "--mix", str(spec), "--out", str(out), "--seed", str(seed)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_spider_train_dev_and_bird_dev_split_by_schema(shared_data: Path, tmp_path: Path) -> None:
    spider, bird = str(shared_data / "spider"), str(shared_data / "bird")
    spec = tmp_path / "all.json"
    spec.write_text(json.dumps({"sources": [
        {"task": "spider-train", "data_dir": spider, "questions": "train_spider.min.json", "count": "all"},
        {"task": "spider-dev", "data_dir": spider, "count": "all"},
        {"task": "bird-dev", "data_dir": bird, "count": "all"},
    ]}))  # fmt: skip
    records = _split(spec, tmp_path / "a", seed=3)
    splits_of_db: dict[str, set[str]] = defaultdict(set)
    splits_of_print: dict[str, set[str]] = defaultdict(set)
    for record in records:
        splits_of_db[record["db_id"]].add(record["split"])
        if record["fingerprint"] is not None:
            splits_of_print[record["fingerprint"]].add(record["split"])
    assert all(len(s) == 1 for s in splits_of_db.values())
    assert all(len(s) == 1 for s in splits_of_print.values())
    # the fingerprints recorded are those of the files (recomputed here, not read back)
    superhero = shared_data / "bird" / "dev_databases" / "superhero" / "superhero.sqlite"
    assert {r["fingerprint"] for r in records if r["db_id"] == "superhero"} == {schema_fingerprint(superhero)}
    assert {r["split"] for r in records} == {"train", "validation", "test"}
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["examples"] == len(records) > 9000
    assert abs(summary["splits"]["train"]["share"] - 0.8) < 0.05
    # deterministic for a seed; another seed cuts differently
    assert _split(spec, tmp_path / "b", seed=3) == records
    assert _split(spec, tmp_path / "c", seed=4) != records
    # every split file holds the source's own rows of that split, and its mixture spec loads them back
    train_rows = json.loads((tmp_path / "a" / "train.bird-dev.json").read_text())
    assert len(train_rows) == sum(r["split"] == "train" and r["source"] == "bird-dev" for r in records)
    test_spec = json.loads((tmp_path / "a" / "test.mix.json").read_text())
    assert {s["name"] for s in test_spec["sources"]} == {"spider-train", "spider-dev", "bird-dev"}
    assert len(load_task("spider-dev", spider)) == sum(r["source"] == "spider-dev" for r in records)


def _copy_schema(path: Path, rows: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE Singer (Singer_ID INTEGER, Name TEXT)")
        conn.executemany("INSERT INTO Singer VALUES (?, ?)", [(i, f"s{i}") for i in range(rows)])
    conn.close()
    return str(path)


def test_databases_sharing_a_schema_land_in_one_split(tmp_path: Path) -> None:
    """Two databases under different names with one schema (other declared types, other rows) are one
    group by fingerprint, two by database."""
    a = _copy_schema(tmp_path / "a.sqlite", 3)
    b = tmp_path / "b.sqlite"
    with sqlite3.connect(b) as conn:
        conn.execute("CREATE TABLE singer (singer_id INT, name VARCHAR(20))")
    conn.close()
    assert schema_fingerprint(a) == schema_fingerprint(b)
    examples = [Example(i, f"q{i}", db, path, "SELECT 1") for i, (db, path) in
                enumerate([("a", a), ("b", str(b))] * 5 + [(f"o{i}", "/absent") for i in range(10)])]  # fmt: skip
    prints = {"a": schema_fingerprint(a), "b": schema_fingerprint(b)}
    for seed in range(10):
        plan = split_by_database(examples, {"x": 0.5, "y": 0.5}, seed=seed, fingerprints=prints)
        assert plan.assignment["a"] == plan.assignment["b"]
        assert plan == split_by_database(list(reversed(examples)), {"x": 0.5, "y": 0.5}, seed=seed,
                                         fingerprints=prints)  # fmt: skip
    apart = [split_by_database(examples, {"x": 0.5, "y": 0.5}, seed=s, group_by="database") for s in range(10)]
    assert any(p.assignment["a"] != p.assignment["b"] for p in apart)
