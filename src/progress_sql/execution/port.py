"""Copy a SQLite benchmark database into PostgreSQL (one schema per database) or a DuckDB file:
types mapped from what each column really stores, the mapping reported, the copy verified (row count
and a checksum per table). Deterministic: the same file gives the same tables, types, rows and
checksums. The mapping table and what it changes: docs/semantics.md#porting-a-database."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from progress_sql.data.introspect import connect_readonly, quote_identifier
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.execution.engines import engine_of
from progress_sql.execution.engines.base import plain_value
from progress_sql.execution.engines.duck import duckdb_path
from progress_sql.execution.engines.postgres import CONTENT_COMMENT, split_location
from progress_sql.sql.affinity import ColumnType, sqlite_affinity
from progress_sql.types import SQLValue

#: What the port computes the stored column classes from; a change here changes every digest.
PORT_VERSION = 1
#: The role ``port-db`` lets query the PostgreSQL schemas it fills (SELECT only, read-only transactions).
DEFAULT_READER = "progress_sql_reader"

Portable = Literal["integer", "real", "text", "blob"]
#: A column's target type per engine and portable class.
TARGET_TYPES: dict[str, dict[Portable, str]] = {
    "postgresql": {"integer": "BIGINT", "real": "DOUBLE PRECISION", "text": "TEXT", "blob": "BYTEA"},
    "duckdb": {"integer": "BIGINT", "real": "DOUBLE", "text": "VARCHAR", "blob": "BLOB"},
}


@dataclass(frozen=True, slots=True)
class ColumnPort:
    """How one column was carried over: SQLite's declared type, the storage classes its values have
    (``typeof``), the portable class and target type chosen, and what the conversion changes."""

    table: str
    column: str
    target_column: str
    declared: str
    stored: tuple[str, ...]
    portable: Portable
    target_type: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class TablePort:
    table: str
    target_table: str
    rows: int
    checksum: str
    verified: bool


@dataclass(frozen=True, slots=True)
class DatabasePort:
    """One database's port: where it went (never with a password) and what was checked."""

    db_id: str
    source: str
    engine: str
    location: str
    columns: tuple[ColumnPort, ...]
    tables: tuple[TablePort, ...]
    content_digest: str

    @property
    def verified(self) -> bool:
        return all(t.verified for t in self.tables)


def declared_class(declared: str) -> Portable:
    """SQLite's column affinity rules (https://sqlite.org/datatype3.html, 3.1) as a portable class.

    >>> declared_class("VARCHAR(20)"), declared_class("int"), declared_class("DOUBLE"), declared_class("")
    ('text', 'integer', 'real', 'blob')
    """
    affinity = sqlite_affinity(declared)
    if affinity != "numeric":
        return affinity
    # numeric affinity: a DECIMAL / NUMERIC column holds numbers; others (DATE, BOOLEAN...) often text
    return "real" if any(word in declared.upper() for word in ("DECIMAL", "NUMERIC")) else "text"


def portable_class(declared: str, stored: Iterable[str]) -> tuple[Portable, str]:
    """The class a column is ported as, from what it stores (SQLite types values, not columns), and
    a note on what converting to it changes.

    >>> portable_class("INTEGER", ["integer", "null"])
    ('integer', '')
    >>> portable_class("NUMERIC", ["integer", "real"])
    ('real', 'integers stored as floats')
    >>> portable_class("INT", ["integer", "text"])
    ('text', 'numbers stored as their text')
    >>> portable_class("DATE", ["null"])
    ('text', 'no values: typed from the declaration')
    """
    kinds = set(stored) - {"null"}
    if not kinds:
        chosen = declared_class(declared)
        return ("text" if chosen == "blob" else chosen), "no values: typed from the declaration"
    if kinds == {"integer"}:
        return "integer", ""
    if kinds <= {"integer", "real"}:
        return "real", "integers stored as floats" if "integer" in kinds else ""
    if kinds == {"blob"}:
        return "blob", ""
    notes = []
    if kinds & {"integer", "real"}:
        notes.append("numbers stored as their text")
    if "blob" in kinds:
        notes.append("blobs stored as their UTF-8 text")
    return "text", "; ".join(notes)


def _convert(portable: Portable) -> Callable[[SQLValue], SQLValue]:
    def to_text(value: SQLValue) -> SQLValue:
        if value is None:
            return None
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        return str(value).replace("\x00", "")  # neither engine's text holds NUL

    def to_real(value: SQLValue) -> SQLValue:
        return None if value is None else float(value)

    def keep(value: SQLValue) -> SQLValue:
        return value

    return {"text": to_text, "real": to_real, "integer": keep, "blob": keep}[portable]


def canonical(value: SQLValue) -> str:
    """A value's text in checksums (the same for both sides of a copy: 3 and 3.0 are one number).

    >>> canonical(3), canonical(3.0), canonical(0.5), canonical(None), canonical(b"a")
    ('n:3', 'n:3', 'n:0.5', 'N', 'b:61')
    """
    if value is None:
        return "N"
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return f"n:{value}"
    if isinstance(value, float):
        return f"n:{int(value)}" if value.is_integer() and abs(value) < 2**63 else f"n:{value!r}"
    if isinstance(value, bytes):
        return "b:" + value.hex()
    return "s:" + str(value)


def rows_checksum(rows: Iterable[Sequence[SQLValue]]) -> str:
    """An order-free checksum of rows (engines return rows in different orders)."""
    lines = sorted("\x1f".join(canonical(v) for v in row) for row in rows)
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8", errors="surrogatepass"))
        digest.update(b"\x1e")
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class _SourceTable:
    name: str
    target: str
    columns: tuple[ColumnPort, ...]
    rows: tuple[tuple[SQLValue, ...], ...]


def read_source(db_path: str | Path, engine: str, *, lower_names: bool) -> list[_SourceTable]:
    """Every table of a SQLite file with its column mapping and its converted rows, in rowid order."""
    types = TARGET_TYPES[engine]
    conn = connect_readonly(db_path)
    try:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
                "ORDER BY name"
            )
        ]
        tables = []
        for name in names:
            info = conn.execute(f"PRAGMA table_info({quote_identifier(name)})").fetchall()
            columns = []
            for _cid, column, declared, *_ in info:
                stored = _stored_classes(conn, name, column)
                portable, note = portable_class(declared or "", stored)
                target_column = column.lower() if lower_names else column
                columns.append(
                    ColumnPort(name, column, target_column, declared or "", stored, portable, types[portable], note)
                )
            _check_unique(name, [c.target_column for c in columns])
            converters = [_convert(c.portable) for c in columns]
            select = ", ".join(quote_identifier(c.column) for c in columns)
            order = " ORDER BY rowid" if _has_rowid(conn, name) else ""
            rows = tuple(
                tuple(convert(value) for convert, value in zip(converters, row, strict=True))
                for row in conn.execute(f"SELECT {select} FROM {quote_identifier(name)}{order}")
            )
            tables.append(_SourceTable(name, name.lower() if lower_names else name, tuple(columns), rows))
        _check_unique(str(db_path), [t.target for t in tables])
        return tables
    except sqlite3.Error as error:
        raise DatasetError(f"cannot read {db_path}: {error}") from error
    finally:
        conn.close()


def _stored_classes(conn: sqlite3.Connection, table: str, column: str) -> tuple[str, ...]:
    query = f"SELECT DISTINCT typeof({quote_identifier(column)}) FROM {quote_identifier(table)} ORDER BY 1"
    return tuple(r[0] for r in conn.execute(query))


def column_types(db_path: str | Path) -> dict[str, dict[str, ColumnType]]:
    """Each column's SQLite affinity and the class ``port-db`` stores it as (lower-cased names): what
    transpiling a SQLite query to a ported database needs (``sql.affinity``). Reads every column's
    storage classes, as the port does."""
    conn = connect_readonly(db_path)
    try:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        found: dict[str, dict[str, ColumnType]] = {}
        for name in names:
            columns = found.setdefault(name.lower(), {})
            for _cid, column, declared, *_ in conn.execute(f"PRAGMA table_info({quote_identifier(name)})"):
                portable, _note = portable_class(declared or "", _stored_classes(conn, name, column))
                columns[column.lower()] = ColumnType(sqlite_affinity(declared or ""), portable)
        return found
    except sqlite3.Error as error:
        raise DatasetError(f"cannot read {db_path}: {error}") from error
    finally:
        conn.close()


def _has_rowid(conn: sqlite3.Connection, table: str) -> bool:
    try:
        conn.execute(f"SELECT rowid FROM {quote_identifier(table)} LIMIT 0")
    except sqlite3.Error:
        return False
    return True


def _check_unique(where: str, names: Sequence[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DatasetError(f"{where}: two names become {name!r} on the target (names are lower-cased)")
        seen.add(name)


def _digest(tables: Sequence[TablePort], columns: Sequence[ColumnPort]) -> str:
    digest = hashlib.sha256(f"progress-sql port v{PORT_VERSION}\n".encode())
    for column in columns:
        digest.update(f"{column.table}.{column.target_column}:{column.target_type}\n".encode())
    for table in tables:
        digest.update(f"{table.target_table}\t{table.rows}\t{table.checksum}\n".encode())
    return digest.hexdigest()


def reader_location(admin: str, reader: str = DEFAULT_READER) -> str:
    """The connection string of the reader role on the server of ``admin`` (same host, database and
    options; no password: use a ``.pgpass`` file or local trust for it).

    >>> reader_location("postgresql://admin:pw@/bench?host=/tmp/pg")
    'postgresql://progress_sql_reader@/bench?host=/tmp/pg'
    """
    scheme, rest = split_location(admin)[0].split("://", 1)
    return f"{scheme}://{reader}@{rest.rpartition('@')[2]}"


def port_database(sqlite_path: str | Path, target: str, db_id: str, *, reader: str = DEFAULT_READER) -> DatabasePort:
    """Copy ``sqlite_path`` to ``target`` (a ``postgresql://`` connection string of a role that may
    create schemas and roles, or a folder for DuckDB files) as database ``db_id`` and verify it."""
    engine = engine_of(target).name
    if engine == "sqlite":
        raise ConfigError(f"port-db copies into PostgreSQL or DuckDB; {target!r} is neither")
    port = _PORTERS[engine]
    return port(Path(sqlite_path), target, db_id, reader)


def _port_postgres(source: Path, target: str, db_id: str, reader: str) -> DatabasePort:
    import psycopg
    from psycopg import sql

    tables = read_source(source, "postgresql", lower_names=True)
    conninfo, _ = split_location(target)
    schema = sql.Identifier(db_id)
    ported: list[TablePort] = []
    columns = tuple(c for t in tables for c in t.columns)
    with psycopg.connect(conninfo, autocommit=False) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(schema))
        for table in tables:
            name = sql.Identifier(db_id, table.target)
            definition = sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(c.target_column), sql.SQL(c.target_type)) for c in table.columns
            )
            conn.execute(sql.SQL("CREATE TABLE {} ({})").format(name, definition))
            names = sql.SQL(", ").join(sql.Identifier(c.target_column) for c in table.columns)
            with conn.cursor() as cursor, cursor.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(name, names)) as copy:
                for row in table.rows:
                    copy.write_row(row)
            back = conn.execute(sql.SQL("SELECT {} FROM {}").format(names, name)).fetchall()
            ported.append(_verified(table, [tuple(plain_value(v) for v in row) for row in back]))
        digest = _digest(ported, columns)
        conn.execute(sql.SQL("COMMENT ON SCHEMA {} IS {}").format(schema, sql.Literal(CONTENT_COMMENT + digest)))
        _grant_reader(conn, db_id, reader)
    return DatabasePort(db_id, str(source), "postgresql", f"{conninfo}#{db_id}", columns, tuple(ported), digest)


#: Functions PostgreSQL lets every role (PUBLIC) execute that reach beyond one read-only query: other
#: sessions (terminate, cancel, their query text), the WAL (a non-transactional message is written
#: even when the query rolls back), large objects (created even in a READ ONLY transaction), advisory
#: locks (a session lock outlives the rollback; any of them makes other workers wait) and NOTIFY.
SERVER_REACHING_FUNCTIONS = (
    "^(pg_terminate_backend|pg_cancel_backend|pg_stat_get_activity|pg_stat_get_backend_activity"
    "|pg_logical_emit_message|pg_notify|pg_(try_)?advisory_.*|lo_.*|loread|lowrite)$"
)
#: What ``port-db`` runs in the benchmark database as a superuser (docs/semantics.md#hardening-the-server
#: prints it for a server of your own): EXECUTE on those functions and every use of the ``public``
#: schema and of temporary tables revoked from PUBLIC. Idempotent; it changes this database only.
HARDEN_DATABASE_SQL = f"""DO $$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
           WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname ~ '{SERVER_REACHING_FUNCTIONS}'
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
  END LOOP;
  EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
  REVOKE CREATE, USAGE ON SCHEMA public FROM PUBLIC;
END $$"""
#: Disk a reader's session may fill with temporary files (sorts and hashes that spill).
READER_TEMP_FILE_LIMIT = "1GB"


def _grant_reader(conn: Any, db_id: str, reader: str) -> None:
    """The reader role: SELECT on the schema's tables only, read-only transactions by default, a temp
    file limit it may not change, and (as a superuser) the database hardened (:data:`HARDEN_DATABASE_SQL`)."""
    import psycopg
    from psycopg import sql

    role = sql.Identifier(reader)
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (reader,)).fetchone()
    if exists is None:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(role))
    conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(role))
    conn.execute(sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(role, sql.Literal(READER_TEMP_FILE_LIMIT)))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(db_id), role))
    conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(sql.Identifier(db_id), role))
    conn.execute("SAVEPOINT revoke_set")
    try:  # PostgreSQL >= 15; earlier versions have no such privilege. A reader that may SET the limit
        # may also lift it (set_config inside its query): older ports granted it
        conn.execute(sql.SQL("REVOKE SET ON PARAMETER temp_file_limit FROM {}").format(role))
        conn.execute("RELEASE SAVEPOINT revoke_set")
    except psycopg.Error:
        conn.execute("ROLLBACK TO SAVEPOINT revoke_set")
    if is_superuser(conn):
        conn.execute(HARDEN_DATABASE_SQL)


def is_superuser(conn: Any) -> bool:
    """Whether the connection's role is a superuser (only one may revoke EXECUTE on built-in functions)."""
    row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    return bool(row and row[0])


def unhardened_functions(conn: Any, reader: str = DEFAULT_READER) -> list[str]:
    """The functions of :data:`SERVER_REACHING_FUNCTIONS` that ``reader`` may still execute in the
    connection's database (empty once :data:`HARDEN_DATABASE_SQL` ran there)."""
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = 'pg_catalog'::regnamespace"
        " AND p.proname ~ %s AND has_function_privilege(%s, p.oid, 'EXECUTE') ORDER BY 1",
        (SERVER_REACHING_FUNCTIONS, reader),
    ).fetchall()
    return [row[0] for row in rows]


def _port_duckdb(source: Path, target: str, db_id: str, reader: str) -> DatabasePort:
    import duckdb

    tables = read_source(source, "duckdb", lower_names=False)
    folder = Path(duckdb_path(target))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{db_id}.duckdb"
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    columns = tuple(c for t in tables for c in t.columns)
    ported: list[TablePort] = []
    conn = duckdb.connect(str(partial), config={"threads": 1})
    try:
        for table in tables:
            name = _duck_identifier(table.target)
            definition = ", ".join(f"{_duck_identifier(c.target_column)} {c.target_type}" for c in table.columns)
            conn.execute(f"CREATE TABLE {name} ({definition})")
            if table.rows:
                _append_duckdb(conn, name, table)
            names = ", ".join(_duck_identifier(c.target_column) for c in table.columns)
            back = conn.execute(f"SELECT {names} FROM {name}").fetchall()
            ported.append(_verified(table, [tuple(plain_value(v) for v in row) for row in back]))
        conn.execute("CHECKPOINT")
    finally:
        conn.close()
    os.replace(partial, path)
    digest = _digest(ported, columns)
    return DatabasePort(db_id, str(source), "duckdb", f"duckdb:{path.resolve()}", columns, tuple(ported), digest)


_ARROW_TYPES = {"integer": "int64", "real": "float64", "text": "string", "blob": "binary"}


def _append_duckdb(conn: Any, name: str, table: _SourceTable) -> None:
    """Insert the rows through an Arrow table (DuckDB's row-by-row ``executemany`` is ~100x slower)."""
    import pyarrow

    arrays = [
        pyarrow.array([row[i] for row in table.rows], type=getattr(pyarrow, _ARROW_TYPES[c.portable])())
        for i, c in enumerate(table.columns)
    ]
    batch = pyarrow.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))])
    conn.register("progress_sql_rows", batch)
    try:
        conn.execute(f"INSERT INTO {name} SELECT * FROM progress_sql_rows")
    finally:
        conn.unregister("progress_sql_rows")


def _duck_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _verified(table: _SourceTable, back: Sequence[Sequence[SQLValue]]) -> TablePort:
    checksum = rows_checksum(table.rows)
    return TablePort(
        table.name,
        table.target,
        len(table.rows),
        checksum,
        len(back) == len(table.rows) and rows_checksum(back) == checksum,
    )


def _reader_may_execute(to: str, reader: str) -> list[str]:
    """On PostgreSQL, the server-reaching functions the reader may still run (``port-db`` connected as
    a role that could not revoke them: docs/semantics.md#hardening-the-server); else empty."""
    if engine_of(to).name != "postgresql":
        return []
    import psycopg

    with psycopg.connect(split_location(to)[0], autocommit=True) as conn:
        return unhardened_functions(conn, reader)


_PORTERS: dict[str, Callable[[Path, str, str, str], DatabasePort]] = {
    "postgresql": _port_postgres,
    "duckdb": _port_duckdb,
}


# ---- the whole run, as ``port-db`` asks for it ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class PortRun:
    """Ported databases and the run's numbers (``summary.json``'s results)."""

    ported: tuple[DatabasePort, ...]
    results: dict[str, Any]

    @property
    def failed(self) -> list[str]:
        """The databases whose copy does not match its source."""
        return [p.db_id for p in self.ported if not p.verified]


def port_databases(
    files: Sequence[tuple[str, Path]], to: str, *, reader: str, out: Path, settings: dict[str, Any],
    on_done: Callable[[str], None] = lambda db_id: None,
) -> PortRun:  # fmt: skip
    """Port every ``(db_id, sqlite path)`` of ``files`` to ``to`` and write the run folder (``out``: a
    ``samples.jsonl`` row per column, its mapping). A missing driver or a refusal raises ConfigError."""
    import time
    from dataclasses import asdict

    from progress_sql.errors import ProgressSQLError
    from progress_sql.execution.engines import public_location
    from progress_sql.runfolder import RunFolder, RunSummary, basic_report, writing_results

    started = time.perf_counter()
    ported: list[DatabasePort] = []
    for db_id, path in files:
        try:
            ported.append(port_database(path, to, db_id, reader=reader))
        except ImportError as error:
            raise ConfigError(
                f"port-db needs the [engines] extra (pip install 'progress-sql[engines]'): {error}"
            ) from error
        except ProgressSQLError:
            raise
        except Exception as error:  # the server's or the file system's refusal, with its message
            raise ConfigError(
                f"cannot port {db_id} to {public_location(to)}: {type(error).__name__}: {error}"
            ) from error
        on_done(db_id)
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
        "reader_may_execute": _reader_may_execute(to, reader),
        "elapsed_s": round(time.perf_counter() - started, 2),
    }
    summary = RunSummary("port-db", settings, results)
    records = [
        {"db_id": p.db_id, **asdict(c), "rows": next(t.rows for t in p.tables if t.table == c.table)}
        for p in ported
        for c in p.columns
    ]
    notes = [f"{c.table}.{c.column} ({c.declared or 'untyped'}, stores {'/'.join(c.stored)}) -> "
             f"{c.target_type}: {c.note}" for p in ported for c in p.columns if c.note]  # fmt: skip
    with writing_results(out):
        RunFolder(out).write(summary, records, basic_report("port-db", summary.to_dict(), results=results, notes=notes))
    return PortRun(tuple(ported), results)
