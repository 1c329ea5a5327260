"""``progress-sql port-db``: copy SQLite benchmark databases into PostgreSQL (a schema per database,
readable by a SELECT-only role) or DuckDB files, with the type mapping reported and every table
verified (row count and checksum); docs/semantics.md#porting-a-database."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import typer

from progress_sql.cli import _common as common
from progress_sql.errors import ProgressSQLError
from progress_sql.execution.engines import public_location
from progress_sql.execution.port import DEFAULT_READER, DatabasePort, port_database, reader_location
from progress_sql.progress import progress_bar
from progress_sql.runfolder import RunSummary, basic_report


def sqlite_files(sources: list[Path]) -> list[tuple[str, Path]]:
    """(db_id, file) of each source: a SQLite file (db_id: its stem), or a folder in Spider's layout
    (``<db_id>/<db_id>.sqlite``); sorted by db_id, each once."""
    found: dict[str, Path] = {}
    for source in sources:
        if source.is_file():
            found[source.stem] = source
        elif source.is_dir():
            for path in sorted(source.glob("*/*.sqlite")):
                if path.stem == path.parent.name:
                    found[path.stem] = path
        else:
            common.fail(f"not a SQLite file or a databases folder: {source}")
    if not found:
        common.fail("no SQLite database found in the sources")
    return sorted(found.items())


def port_db_command(
    sources: list[Path] = typer.Argument(..., help="SQLite files, or folders of <db_id>/<db_id>.sqlite."),
    to: str = typer.Option(
        ...,
        "--to",
        help="postgresql://ROLE@HOST/DB (a role that may create schemas and roles; a schema per database) "
        "or duckdb:DIR (one <db_id>.duckdb file per database).",
    ),
    reader: str = typer.Option(
        DEFAULT_READER, "--reader", help="PostgreSQL: the SELECT-only role created (or updated) for queries."
    ),
    db: list[str] = typer.Option([], "--db", help="Only these db_ids (repeatable)."),
    out: Path = common.out_dir_option(also="a samples.jsonl row per column: its mapping"),
    json_output: bool = common.json_option(),
) -> None:
    """Copy SQLite databases into PostgreSQL or DuckDB: types mapped and reported, every table verified."""
    files = sqlite_files(sources)
    if db:
        unknown = sorted(set(db) - {d for d, _ in files})
        if unknown:
            common.fail(f"--db names no database of the sources: {', '.join(unknown)}")
        files = [(d, p) for d, p in files if d in set(db)]
    common.prepare_out(out)
    started = time.perf_counter()
    ported: list[DatabasePort] = []
    with progress_bar("[bold]port-db[/] {task.description}", console=common.stdout, quiet=json_output) as bar:
        job = bar.add_task(f"{len(files)} databases", total=len(files))
        for db_id, path in files:
            try:
                ported.append(port_database(path, to, db_id, reader=reader))
            except ImportError as error:
                common.fail(f"port-db needs the [engines] extra (pip install 'progress-sql[engines]'): {error}")
            except ProgressSQLError:
                raise
            except Exception as error:  # the server's or the file system's refusal, with its message
                common.fail(f"cannot port {db_id} to {public_location(to)}: {type(error).__name__}: {error}")
            bar.update(job, advance=1, description=f"{db_id} done")
    elapsed = time.perf_counter() - started
    failed = [p.db_id for p in ported if not p.verified]
    results = {
        "databases": len(ported),
        "verified": len(ported) - len(failed),
        "not_verified": failed,
        "tables": sum(len(p.tables) for p in ported),
        "rows": sum(t.rows for p in ported for t in p.tables),
        "converted_columns": sum(1 for p in ported for c in p.columns if c.note),
        "locations": {p.db_id: public_location(p.location) for p in ported},
        "query_as": None if not to.startswith(("postgresql://", "postgres://")) else reader_location(to, reader),
        "elapsed_s": round(elapsed, 2),
    }
    settings = {"sources": [str(s) for s in sources], "to": public_location(to), "reader": reader, "db": list(db)}
    summary = RunSummary("port-db", settings, results)
    records = [
        {"db_id": p.db_id, **asdict(c), "rows": next(t.rows for t in p.tables if t.table == c.table)}
        for p in ported
        for c in p.columns
    ]
    notes = [f"{c.table}.{c.column} ({c.declared or 'untyped'}, stores {'/'.join(c.stored)}) -> "
             f"{c.target_type}: {c.note}" for p in ported for c in p.columns if c.note]  # fmt: skip
    common.write_run(out, summary, records, basic_report("port-db", summary.to_dict(), results=results, notes=notes))
    if json_output:
        typer.echo(json.dumps(results, indent=2))
    else:
        common.stdout.print(
            f"ported {len(ported)} databases ({results['tables']} tables, {results['rows']} rows); verified: "
            f"{results['verified']} of {len(ported)}"
        )
    if failed:
        common.fail(f"the copy of {', '.join(failed)} does not match its source (row count or checksum)", code=1)


def register(app: typer.Typer) -> None:
    common.add_command(app, "port-db", port_db_command)
