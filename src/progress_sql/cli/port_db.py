"""``progress-sql port-db``: copy SQLite benchmark databases into PostgreSQL (a schema per database,
readable by a SELECT-only role) or DuckDB files, with the type mapping reported and every table
verified (row count and checksum); docs/semantics.md#porting-a-database."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from progress_sql.cli import _common as common
from progress_sql.execution.engines import public_location
from progress_sql.execution.port import DEFAULT_READER, port_databases
from progress_sql.progress import progress_bar


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


_TO = typer.Option(
    ...,
    "--to",
    help="postgresql://ROLE@HOST/DB (a role that may create schemas and roles; a schema per database) "
    "or duckdb:DIR (one <db_id>.duckdb file per database).",
)
_READER = typer.Option(
    DEFAULT_READER, "--reader", help="PostgreSQL: the SELECT-only role created (or updated) for queries."
)


def port_db_command(
    sources: list[Path] = typer.Argument(..., help="SQLite files, or folders of <db_id>/<db_id>.sqlite."),
    to: str = _TO,
    reader: str = _READER,
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
    settings = {"sources": [str(s) for s in sources], "to": public_location(to), "reader": reader, "db": list(db)}
    with progress_bar("[bold]port-db[/] {task.description}", console=common.stdout, quiet=json_output) as bar:
        job = bar.add_task(f"{len(files)} databases", total=len(files))
        run = port_databases(
            files, to, reader=reader, out=out, settings=settings,
            on_done=lambda db_id: bar.update(job, advance=1, description=f"{db_id} done"),
        )  # fmt: skip
    results, failed, ported = run.results, run.failed, run.ported
    if json_output:
        typer.echo(json.dumps(results, indent=2))
    else:
        common.stdout.print(
            f"ported {len(ported)} databases ({results['tables']} tables, {results['rows']} rows); verified: "
            f"{results['verified']} of {len(ported)}"
        )
    if results["reader_may_execute"]:
        common.warn(
            f"the reader may still run {len(results['reader_may_execute'])} functions that reach other sessions "
            "or the server (pg_terminate_backend, large objects, ...): port-db's role is not a superuser; "
            "have one run the SQL of docs/semantics.md#hardening-the-server in this database"
        )
    if failed:
        common.fail(f"the copy of {', '.join(failed)} does not match its source (row count or checksum)", code=1)


def register(app: typer.Typer) -> None:
    common.add_command(app, "port-db", port_db_command)
