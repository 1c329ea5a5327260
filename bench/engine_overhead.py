"""Per-query overhead of each execution backend against a bare driver loop on the same queries
(docs/benchmarks.md, engines section). The queries: BIRD Mini-Dev's superhero golds (SQLite's own
text on SQLite; sqlglot's transpilation on PostgreSQL and DuckDB, those that run). For each engine:
the bare driver (one connection, execute + fetchall) and the backend's runner in the same process
(the guards: gate, read-only transaction, timeout timer, batched fetch, value normalisation), run
alternately, median over repeats of the summed time per query.

    python bench/engine_overhead.py --pg postgresql://progress_sql_reader@/bench?host=DIR#superhero \\
        --duckdb duckdb:/tmp/agreement/duckdb/superhero.duckdb --repeats 7
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from progress_sql.data.schema import read_schema
from progress_sql.execution.engines import EngineRunners
from progress_sql.execution.engines.duck import duckdb_path, safe_config
from progress_sql.execution.engines.postgres import split_location
from progress_sql.execution.executor import ExecLimits
from progress_sql.judge.gold import engine_sql

LIMITS = ExecLimits(timeout_s=30.0)


def bare(engine: str, location: str) -> tuple[Callable[[str], Any], Callable[[], None]]:
    if engine == "sqlite":
        conn: Any = sqlite3.connect(f"file:{location}?mode=ro", uri=True)
        return (lambda sql: conn.execute(sql).fetchall()), conn.close
    if engine == "duckdb":
        import duckdb

        # one process may open a file with one configuration only: the runner's (settings, not per-query work)
        conn = duckdb.connect(duckdb_path(location), read_only=True, config=safe_config(LIMITS))
        return (lambda sql: conn.execute(sql).fetchall()), conn.close
    import psycopg

    conninfo, schema = split_location(location)
    conn = psycopg.connect(conninfo, autocommit=True)
    conn.execute(f'SET search_path = "{schema}"')
    return (lambda sql: conn.execute(sql).fetchall()), conn.close


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--pg", required=True)
    parser.add_argument("--duckdb", required=True)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    data = Path(args.data)
    sqlite_path = str(data / "bird" / "dev_databases" / "superhero" / "superhero.sqlite")
    mini = json.loads((data / "bird" / "mini_dev" / "mini_dev_sqlite.json").read_text())
    golds = [q["SQL"] for q in mini if q["db_id"] == "superhero"]
    schema = read_schema(sqlite_path)
    runners = EngineRunners()
    out: dict[str, Any] = {}
    for engine, location, dialect in (
        ("sqlite", sqlite_path, "sqlite"),
        ("postgresql", args.pg, "postgres"),
        ("duckdb", args.duckdb, "duckdb"),
    ):
        queries = [engine_sql(q, dialect, schema) for q in golds]
        queries = [
            q for q in queries if runners.run(location, q, LIMITS).status == "ok"
        ]  # warm, and only those that run
        run_bare, close = bare(engine, location)
        for q in queries:
            run_bare(q)
        bare_times, ours = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            for q in queries:
                run_bare(q)
            bare_times.append((time.perf_counter() - start) / len(queries))
            start = time.perf_counter()
            for q in queries:
                runners.run(location, q, LIMITS)
            ours.append((time.perf_counter() - start) / len(queries))
        close()
        b, o = statistics.median(bare_times), statistics.median(ours)
        out[engine] = {"queries": len(queries), "bare_ms": round(1000 * b, 3), "backend_ms": round(1000 * o, 3),
                       "overhead_ms": round(1000 * (o - b), 3), "ratio": round(o / b, 2)}  # fmt: skip
        print(engine, out[engine], flush=True)
    runners.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
