"""Cross-engine agreement (issue 20): port the databases to PostgreSQL and DuckDB, run the gold
queries there and compare with SQLite's results on the SQLite files.

* BIRD Mini-Dev, superhero: the PostgreSQL gold of each question on PostgreSQL, and the SQLite gold
  transpiled by sqlglot on DuckDB, against the SQLite gold on SQLite, under the ``bird`` preset.
* Spider dev, the 20 databases at hand: the SQLite golds transpiled by sqlglot on both engines,
  against SQLite under the ``spider`` preset.

Usage (a cluster from scripts/pg_cluster.sh; ADMIN may create schemas and roles):
    python bench/engine_agreement.py --admin postgresql://admin@/bench?host=DIR --out /tmp/agreement
Writes agreement.json (every disagreement with both results) and prints the shares.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from progress_sql.data.loaders import load_spider
from progress_sql.data.schema import read_schema
from progress_sql.execution.engines import locate
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.execution.port import DEFAULT_READER, column_types, port_database
from progress_sql.judge.compare import get_preset, judge
from progress_sql.judge.gold import engine_sql

LIMITS = ExecLimits(timeout_s=30.0)


def reader_url(admin: str) -> str:
    scheme, rest = admin.split("://", 1)
    return f"{scheme}://{DEFAULT_READER}@{rest.split('@', 1)[1]}"


def run_pairs(pool: ExecutionPool, jobs: list[ExecJob]) -> list[Any]:
    return pool.run_many(jobs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--admin", required=True)
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    data = Path(args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    duck = f"duckdb:{(args.out / 'duckdb').resolve()}"
    pg = reader_url(args.admin)
    report: dict[str, Any] = {}
    started = time.perf_counter()

    # -- BIRD Mini-Dev, superhero -----------------------------------------------------------------
    superhero = data / "bird" / "dev_databases" / "superhero" / "superhero.sqlite"
    [port_database(superhero, args.admin, "superhero"), port_database(superhero, duck, "superhero")]
    mini = data / "bird" / "mini_dev"
    sqlite_q = [q for q in json.loads((mini / "mini_dev_sqlite.json").read_text()) if q["db_id"] == "superhero"]
    pg_q = {q["question_id"]: q for q in json.loads((mini / "mini_dev_postgresql.json").read_text())}
    schema = read_schema(superhero)
    bird = get_preset("bird")
    with ExecutionPool(args.workers) as pool:
        base = pool.run_many([ExecJob(str(superhero), q["SQL"], LIMITS) for q in sqlite_q])
        on_pg = pool.run_many(
            [ExecJob(locate(pg, "superhero", str(superhero)), pg_q[q["question_id"]]["SQL"], LIMITS) for q in sqlite_q]
        )
        duck_sql = [engine_sql(q["SQL"], "duckdb", schema, column_types(superhero)) for q in sqlite_q]
        on_duck = pool.run_many([ExecJob(locate(duck, "superhero", str(superhero)), s, LIMITS) for s in duck_sql])
        for engine, results, sqls in (
            ("postgresql", on_pg, [pg_q[q["question_id"]]["SQL"] for q in sqlite_q]),
            ("duckdb", on_duck, duck_sql),
        ):
            rows = []
            for q, gold, got, sql in zip(sqlite_q, base, results, sqls, strict=True):
                verdict = judge(bird, q["SQL"], [gold], got)
                rows.append(
                    {
                        "question_id": q["question_id"],
                        "agree": verdict.match,
                        "verdict": verdict.status,
                        "sqlite_sql": q["SQL"],
                        "engine_sql": sql,
                        "sqlite_rows": [list(map(repr, r)) for r in gold.rows[:5]],
                        "engine_rows": [list(map(repr, r)) for r in got.rows[:5]],
                        "engine_error": got.error,
                    }
                )
            report[f"bird-superhero/{engine}"] = {
                "questions": len(rows),
                "agree": sum(r["agree"] for r in rows),
                "transpiled": sum(s != q["SQL"] for s, q in zip(sqls, sqlite_q, strict=True))
                if engine == "duckdb"
                else None,
                "disagreements": [r for r in rows if not r["agree"]],
            }

    # -- Spider dev ---------------------------------------------------------------------------------
    examples = [
        e for e in load_spider(data / "spider" / "dev.json", data / "spider" / "database") if Path(e.db_path).is_file()
    ]
    databases = sorted({(e.db_id, e.db_path) for e in examples})
    port_log = []
    for db_id, path in databases:
        for target in (args.admin, duck):
            done = port_database(path, target, db_id)
            port_log.append({"db_id": db_id, "engine": done.engine, "verified": done.verified,
                             "tables": len(done.tables), "rows": sum(t.rows for t in done.tables),
                             "notes": sorted({c.note for c in done.columns if c.note})})  # fmt: skip
    report["spider-ports"] = port_log
    spider = get_preset("spider")
    schemas = {db_id: read_schema(path) for db_id, path in databases}
    types = {db_id: column_types(path) for db_id, path in databases}
    with ExecutionPool(args.workers) as pool:
        base = pool.run_many([ExecJob(e.db_path, spider.gold_queries(e.gold_sql)[0], LIMITS) for e in examples])
        for engine, collection, dialect in (("postgresql", pg, "postgres"), ("duckdb", duck, "duckdb")):
            sqls = [
                engine_sql(spider.gold_queries(e.gold_sql)[0], dialect, schemas[e.db_id], types[e.db_id])
                for e in examples
            ]
            got = pool.run_many(
                [
                    ExecJob(locate(collection, e.db_id, e.db_path), s, LIMITS)
                    for e, s in zip(examples, sqls, strict=True)
                ]
            )
            rows = []
            for e, gold, result, sql in zip(examples, base, got, sqls, strict=True):
                verdict = judge(spider, e.gold_sql, [gold], result)
                rows.append({"index": e.index, "db_id": e.db_id, "agree": verdict.match, "verdict": verdict.status,
                             "sqlite_sql": e.gold_sql, "engine_sql": sql, "engine_error": result.error,
                             "sqlite_rows": [list(map(repr, r)) for r in gold.rows[:5]],
                             "engine_rows": [list(map(repr, r)) for r in result.rows[:5]]})  # fmt: skip
            valid = [r for r in rows if r["verdict"] != "gold_invalid"]
            report[f"spider-dev/{engine}"] = {
                "examples": len(rows),
                "sqlite_gold_valid": len(valid),
                "agree": sum(r["agree"] for r in rows),
                "verdicts": dict(Counter(r["verdict"] for r in rows)),
                "disagreements": [r for r in rows if not r["agree"]],
            }
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    (args.out / "agreement.json").write_text(json.dumps(report, indent=1, default=str))
    for key, block in report.items():
        if isinstance(block, dict) and "agree" in block:
            total = block.get("questions") or block.get("examples")
            print(f"{key}: {block['agree']} / {total} agree ({100 * block['agree'] / total:.1f}%)")
    print(f"ports verified: {all(p['verified'] for p in port_log)}; {report['elapsed_s']} s")


if __name__ == "__main__":
    main()
