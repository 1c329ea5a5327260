"""PostgreSQL through psycopg 3 against a real server. A location is a ``postgresql://`` connection
string whose fragment names the schema (``postgresql://reader@/bench?host=/run/pg#superhero``). The
guards, each in PostgreSQL's own terms (docs/semantics.md#postgresql): the statement gate (its nesting
limit bounds the planner's memory); a role that may only SELECT, with no EXECUTE on the functions that
reach other sessions or the server (``progress-sql port-db`` sets it up: execution/port.py); every query
in its own ``READ ONLY`` transaction whose settings are ``SET LOCAL`` (``search_path``, ``work_mem``,
``temp_file_limit`` where the role may set it, ``statement_timeout``), rolled back afterwards and the
session reset (``DISCARD ALL``: no setting, advisory lock, prepared statement or cursor outlives the
query); a cancel from a timer at the deadline (a server-side timeout covers one statement, the timer
the whole fetch); a server-side cursor fetched in batches under the row and byte caps; a fresh backend
after a query that ran out of time or resources (a backend keeps the memory its planner took); the
pool's worker processes around the driver."""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from progress_sql.execution.engines.base import Deadline, EngineName, EngineRunner, fetch_capped
from progress_sql.execution.executor import ExecLimits, OpenConnections, error_message, statement_gate
from progress_sql.types import ExecResult, Row

#: The comment ``progress-sql port-db`` puts on each schema it fills: the content digest follows.
CONTENT_COMMENT = "progress-sql content sha256:"
#: Seconds a connection attempt may take.
CONNECT_TIMEOUT_S = 10
_SCHEMES = ("postgresql://", "postgres://")
# admin_shutdown (pg_terminate_backend), crash_shutdown, cannot_connect_now
_OPERATOR_INTERVENTION = frozenset({"57P01", "57P02", "57P03"})
# insufficient_resources (out of memory, disk full), program_limit_exceeded (statement too complex)
_RESOURCE_CLASSES = frozenset({"53", "54"})
_identities: dict[str, str] = {}
_identities_lock = threading.Lock()


def split_location(location: str) -> tuple[str, str | None]:
    """(connection string, schema) of a location: the schema is the URL's fragment.

    >>> split_location("postgresql://reader@/bench?host=/tmp#superhero")
    ('postgresql://reader@/bench?host=/tmp', 'superhero')
    """
    conninfo, _, schema = location.partition("#")
    return conninfo, schema or None


def _connect(conninfo: str, *, autocommit: bool) -> Any:
    import psycopg

    return psycopg.connect(
        conninfo, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S, application_name="progress-sql"
    )


def schema_digest(conn: Any, schema: str) -> str:
    """A digest of every table of ``schema``: each table's rows as text, sorted, hashed by the
    server (reads every row: the fallback for schemas that ``port-db`` did not fill)."""
    from psycopg import sql

    tables = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY table_name", (schema,)
    ).fetchall()
    digest = hashlib.sha256()
    for (table,) in tables:
        query = sql.SQL("SELECT md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) FROM {} t").format(
            sql.Identifier(schema, table)
        )
        (value,) = conn.execute(query).fetchone()
        digest.update(f"{table}\t{value}\n".encode())
    return digest.hexdigest()


def lost_connection(error: Any, conn: Any) -> bool:
    """Whether ``error`` came from outside the statement: the connection is gone (terminated by another
    session, the server down or restarting) or the server refused it (SQLSTATE class 08, 57P01-57P03)."""
    sqlstate = getattr(error, "sqlstate", None) or ""
    return bool(conn.broken or conn.closed) or sqlstate.startswith("08") or sqlstate in _OPERATOR_INTERVENTION


@dataclass(frozen=True, slots=True)
class PostgresEngine:
    name: EngineName = "postgresql"
    display_name: str = "PostgreSQL"
    dialect: str = "postgres"

    def claims(self, location: str) -> bool:
        return location.startswith(_SCHEMES)

    def runner(self) -> EngineRunner:
        return PostgresRunner()

    def content_identity(self, location: str) -> str:
        """The digest ``port-db`` recorded in the schema's comment, else one computed from its rows;
        once per location and process."""
        with _identities_lock:
            known = _identities.get(location)
        if known is not None:
            return known
        conninfo, schema = split_location(location)
        schema = schema or "public"
        with _connect(conninfo, autocommit=True) as conn:
            row = conn.execute(
                "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = %s", (schema,)
            ).fetchone()
            comment = row[0] if row else None
            if comment and comment.startswith(CONTENT_COMMENT):
                identity = str(comment[len(CONTENT_COMMENT) :])
            else:
                identity = schema_digest(conn, schema)
        with _identities_lock:
            _identities[location] = identity
        return identity

    def locate(self, backend_db: str, db_id: str) -> str:
        return f"{split_location(backend_db)[0]}#{db_id}"

    def public_location(self, location: str) -> str:
        parts = urlsplit(location)
        if parts.password is None:
            return location
        host = parts.hostname or ""
        netloc = f"{parts.username}@{host}" if parts.username else host
        if parts.port is not None:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True, slots=True)
class _Session:
    """An open connection (autocommit: each query's transaction is explicit) and the ``SET LOCAL``
    statements that open each of its queries."""

    conn: Any
    settings: str

    def close(self) -> None:
        self.conn.close()


class PostgresRunner:
    """Keeps one connection per location (a few); each query runs in its own read-only transaction."""

    def __init__(self, max_connections: int = 8) -> None:
        import psycopg

        self._psycopg = psycopg
        self._connections: OpenConnections[_Session] = OpenConnections(max_connections)

    def close(self) -> None:
        self._connections.close()

    def _session(self, location: str, limits: ExecLimits) -> _Session:
        key = (location, limits.memory_bytes)
        session = self._connections.get(key)
        if session is not None and not session.conn.closed and not session.conn.broken:
            return session
        self._connections.forget(key)
        conninfo, schema = split_location(location)
        conn = _connect(conninfo, autocommit=True)
        try:
            settings = self._settings(conn, schema, limits)
        except BaseException:
            conn.close()
            raise
        return self._connections.add(key, _Session(conn, settings))

    def _settings(self, conn: Any, schema: str | None, limits: ExecLimits) -> str:
        """The ``SET LOCAL`` statements of every query on ``conn`` (checked once here: the schema
        exists, and whether the role may lower ``temp_file_limit``)."""
        psycopg = self._psycopg
        from psycopg import sql

        settings = [
            sql.SQL("SET LOCAL work_mem = {}").format(sql.Literal(f"{max(64, limits.memory_bytes // 16 // 1024)}kB"))
        ]
        if schema is not None:
            found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
            if found is None:
                raise psycopg.OperationalError(f"schema {schema!r} not found")
            settings.append(sql.SQL("SET LOCAL search_path = {}").format(sql.Identifier(schema)))
        temp_limit = sql.SQL("SET LOCAL temp_file_limit = {}").format(sql.Literal(f"{limits.memory_bytes // 1024}kB"))
        try:  # a superuser-only setting: a role without the SET privilege keeps its default (port-db sets one)
            with conn.transaction():
                conn.execute(temp_limit)
            settings.append(temp_limit)
        except psycopg.errors.InsufficientPrivilege:
            pass
        return "; ".join(statement.as_string(conn) for statement in settings)

    def run(self, location: str, sql: str, limits: ExecLimits) -> ExecResult:
        start = time.perf_counter()
        refusal = statement_gate(sql)
        if refusal is not None:
            return ExecResult("error", error=refusal, elapsed_s=time.perf_counter() - start)
        if "\x00" in sql:
            return ExecResult("error", error="the SQL contains a NUL character", elapsed_s=time.perf_counter() - start)
        psycopg = self._psycopg
        try:
            session = self._session(location, limits)
        except psycopg.Error as error:
            return ExecResult("error", error=f"cannot open database: {error_message(error)}", failed_outside=True)
        conn = session.conn
        deadline = Deadline(limits.timeout_s, conn.cancel_safe)
        rows: list[Row] = []
        result: ExecResult | None = None
        exhausted = False  # out of time or of the server's resources: the backend is replaced
        try:
            deadline.start()
            timeout_ms = max(1, int(limits.timeout_s * 1000))
            conn.execute(f"BEGIN READ ONLY; {session.settings}; SET LOCAL statement_timeout = {timeout_ms}")
            with conn.cursor(name="progress_sql_query") as cursor:
                cursor.execute(sql)  # untrusted text by design
                columns = tuple(d.name for d in cursor.description or ())
                truncated = fetch_capped(cursor, limits, rows)
        except psycopg.errors.QueryCanceled as error:
            rows.clear()
            elapsed = time.perf_counter() - start
            if deadline.fired.is_set() or "statement timeout" in str(error):
                result = ExecResult("timeout", error=f"exceeded {limits.timeout_s:g} s", elapsed_s=elapsed)
            else:  # not our deadline: another session cancelled it (pg_cancel_backend)
                result = ExecResult("error", error=error_message(error), elapsed_s=elapsed, failed_outside=True)
        except (psycopg.Error, ValueError, OverflowError, UnicodeError) as error:
            rows.clear()
            elapsed = time.perf_counter() - start
            if isinstance(error, psycopg.errors.OutOfMemory):
                result = ExecResult("error", error="out of memory", elapsed_s=elapsed)
            else:
                outside = isinstance(error, psycopg.Error) and lost_connection(error, conn)
                result = ExecResult("error", error=error_message(error), elapsed_s=elapsed, failed_outside=outside)
            exhausted = (getattr(error, "sqlstate", None) or "")[:2] in _RESOURCE_CLASSES
        except MemoryError:
            rows.clear()
            result = ExecResult("error", error="out of memory", elapsed_s=time.perf_counter() - start)
        finally:
            deadline.cancel()
            self._end_transaction(location, limits, session)
        if result is None:
            return ExecResult(
                "ok", columns=columns, rows=tuple(rows), elapsed_s=time.perf_counter() - start, truncated=truncated
            )
        if exhausted or result.status == "timeout":
            self._recycle(location, limits, session)
        return result

    def _end_transaction(self, location: str, limits: ExecLimits, session: _Session) -> None:
        """Roll the query's transaction back and reset the session, so that nothing the query did (a
        ``set_config``, an advisory lock, a large object, a cursor) outlives it; a connection that cannot
        be reset is closed."""
        try:
            session.conn.execute("ROLLBACK")
            session.conn.execute("DISCARD ALL")
        except self._psycopg.Error:
            self._recycle(location, limits, session)

    def _recycle(self, location: str, limits: ExecLimits, session: _Session) -> None:
        """Close the session: the next query gets a fresh backend (PostgreSQL keeps the memory a backend
        took for as long as the connection lives)."""
        self._connections.forget((location, limits.memory_bytes))
        session.close()
