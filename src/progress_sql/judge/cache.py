"""Gold results, cached so that a gold query runs once per example however many predictions are scored;
the key and where results live: docs/semantics.md#the-gold-cache.

Nothing read from the directory is trusted: an entry carries a digest of its key and content and is
checked field by field, so a damaged, edited or foreign entry is a miss and its gold runs again; an
error the query did not cause (``ExecResult.failed_outside``: a lost connection, an outage, a dead
worker) is never kept, nor is a timeout on disk; temporary files left by a killed write are removed."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
import pickle
import re
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any

from progress_sql.errors import ConfigError
from progress_sql.execution.engines import engine_of
from progress_sql.execution.executor import ExecLimits
from progress_sql.judge.sqltext import tokens
from progress_sql.types import ExecResult, SQLValue

# 2: keys name the engine. 3: entries carry their key and a digest, outside failures are never kept
# (an entry of an earlier format is a miss: its gold runs again).
_FORMAT = 3
#: A temporary file of a write (``<name>.tmp<pid>``) older than this is a killed write's, whatever its pid.
STALE_TEMPORARY_S = 3600.0
_TEMPORARY = re.compile(r"\.tmp(\d+)$")
_STORED_STATUSES = frozenset({"ok", "error"})  # a timeout depends on the machine: memory only
_REFERENCE_MAGIC = b"progress-sql gold reference"


def normalize_sql(sql: str) -> str:
    """Collapse whitespace outside literals and drop trailing semicolons; literals keep their case.

    >>> normalize_sql("SELECT  a\\n FROM t WHERE b = 'x  y' ;")
    "SELECT a FROM t WHERE b = 'x  y'"
    """
    parts = [" " if kind == "space" else text for kind, text in tokens(sql)]
    return "".join(parts).strip().rstrip(";").strip()


def cache_key(
    db_path: str | Path, sql: str, preset: Mapping[str, Any], limits: ExecLimits, *, content: str | None = None
) -> str:
    """The key of one gold result: the engine and the database's content identity (a file's digest,
    re-validated by stat on every call; a PostgreSQL schema's recorded digest), the SQL, the preset
    and the limits. ``content``: that identity, already read (a batch reads it once per database)."""
    engine = engine_of(str(db_path))
    identity = content if content is not None else engine.content_identity(str(db_path))
    return _key(engine.name, identity, sql, json.dumps(preset, sort_keys=True), limits)


@lru_cache(maxsize=65_536)
def _key(engine: str, db_digest: str, sql: str, preset_json: str, limits: ExecLimits) -> str:
    payload = json.dumps(
        {
            "v": _FORMAT,
            "engine": engine,
            "db": db_digest,
            "sql": normalize_sql(sql),
            "preset": _decoded(preset_json),
            "limits": _fields_of(limits),
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


# A batch's keys share one preset and one set of limits: decoded once, not once per gold (read only).
@lru_cache(maxsize=64)
def _decoded(preset_json: str) -> Any:
    return json.loads(preset_json)


@lru_cache(maxsize=64)
def _fields_of(limits: ExecLimits) -> dict[str, Any]:
    return asdict(limits)


class GoldCache:
    """In-memory (and optionally on-disk) map from :func:`cache_key` to :class:`ExecResult`.

    ``directory`` is checked at once: a file, or a folder this process cannot write, raises
    :class:`~progress_sql.errors.ConfigError` (one line) before any work; temporary files that killed
    writes left there are removed."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self._memory: dict[str, ExecResult] = {}
        self._directory = None if directory is None else usable_directory(Path(directory))
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        if self._directory is not None:
            remove_stale_temporaries(self._directory)

    def __len__(self) -> int:
        return len(self._memory)

    def _file(self, key: str) -> Path:
        assert self._directory is not None
        return self._directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> ExecResult | None:
        with self._lock:
            found = self._memory.get(key)
        if found is None and self._directory is not None:
            found = read_entry(self._file(key), key)
            if found is not None:
                with self._lock:
                    self._memory[key] = found
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    @property
    def directory(self) -> Path | None:
        """Where results persist across runs (None: in memory only)."""
        return self._directory

    def get_reference(self, key: str) -> Any | None:
        """A gold's prepared analysis stored by :meth:`put_reference` in an earlier run (None: absent,
        damaged, or written by another format or for another key); always None without a directory."""
        if self._directory is None:
            return None
        try:
            data = self._reference_file(key).read_bytes()
        except OSError:
            return None
        header, _, payload = data.partition(b"\n")
        if header != _reference_header(key, payload):
            return None  # damaged or foreign: never unpickled
        try:
            # Checked against its digest above: the bytes this class wrote for this key.
            value = pickle.loads(payload)
        except Exception:  # a class that moved since: rebuilt, like any miss
            return None
        return value

    def put_reference(self, key: str, value: Any) -> None:
        """Keep a gold's prepared analysis (its ODT tree, bigrams, hardness) on disk for later runs
        (nothing without a directory; a value that cannot be pickled is not kept)."""
        if self._directory is None:
            return
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
            return
        _write_atomic(self._reference_file(key), _reference_header(key, payload) + b"\n" + payload)

    def _reference_file(self, key: str) -> Path:
        assert self._directory is not None
        return self._directory / "references" / key[:2] / f"{key}.pickle"

    def put(self, key: str, result: ExecResult) -> None:
        """Keep ``result`` under ``key``: in memory, and on disk unless it is a timeout; an error the
        query did not cause (``failed_outside``) is not kept at all, so its gold runs again."""
        if result.failed_outside:
            return
        with self._lock:
            self._memory[key] = result
        if self._directory is not None and result.status in _STORED_STATUSES:
            _write_atomic(self._file(key), encode_entry(key, result).encode("ascii"))


def usable_directory(directory: Path) -> Path:
    """``directory``, created if absent, once a file can be written there; ConfigError (one line) otherwise."""
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"the gold cache folder {directory} is a file, not a folder")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        raise ConfigError(f"cannot use {directory} as the gold cache folder: {error.strerror or error}") from None
    return directory


def remove_stale_temporaries(directory: Path, *, older_than_s: float = STALE_TEMPORARY_S) -> list[Path]:
    """Remove the temporary files (``*.tmp<pid>``) that killed writes left under ``directory``: those whose
    process is gone, or older than ``older_than_s`` (a pid may have been reused, or be another
    machine's on a shared folder); returns what was removed."""
    removed = []
    now = time.time()
    for folder, _, names in os.walk(directory):
        for name in names:
            match = _TEMPORARY.search(name)
            if match is None:
                continue
            path = Path(folder) / name
            try:
                stale = not _process_alive(int(match.group(1))) or now - path.stat().st_mtime > older_than_s
                if stale:
                    path.unlink()
                    removed.append(path)
            except OSError:  # already gone (its writer renamed it), or not ours to remove
                continue
    return removed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's (it exists) or a number no pid has: the age decides
    return True


def _write_atomic(path: Path, data: bytes) -> None:
    """``data`` at ``path`` through a temporary file renamed into place (a reader never sees half a
    file); a write that fails (a full disk, the temporary removed by a cleaner) only leaves a miss."""
    temporary = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)


def _reference_header(key: str, payload: bytes) -> bytes:
    digest = hashlib.sha256(key.encode("ascii", "replace") + b"\0" + payload).hexdigest()
    return b"%s %d %s" % (_REFERENCE_MAGIC, _FORMAT, digest.encode("ascii"))


# -- entries: what a result looks like on disk, and the checks it must pass to be read back ----------


def _encode_value(value: SQLValue) -> Any:
    if isinstance(value, bytes):
        return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"))


def _entry_digest(key: str, result: Any) -> str:
    return hashlib.sha256(_canonical({"key": key, "result": result}).encode("ascii")).hexdigest()


def encode_entry(key: str, result: ExecResult) -> str:
    """The on-disk text of ``result`` under ``key`` (ASCII JSON): the format, the key, the result and
    a SHA-256 of key and result that :func:`read_entry` checks."""
    content = {
        "status": result.status,
        "columns": list(result.columns),
        "rows": [[_encode_value(v) for v in row] for row in result.rows],
        "error": result.error,
        "elapsed_s": result.elapsed_s,
        "truncated": result.truncated,
    }
    return _canonical({"format": _FORMAT, "key": key, "result": content, "digest": _entry_digest(key, content)})


def read_entry(path: Path, key: str) -> ExecResult | None:
    """The result stored at ``path`` for ``key``, or None (a miss) when the file is absent, unreadable,
    of another format or key, damaged (its digest), or holds anything a stored result cannot."""
    try:
        data = json.loads(path.read_text(encoding="ascii"))
    except (OSError, ValueError, RecursionError):  # UnicodeError is a ValueError; so is a 5,000-digit integer
        return None
    if not isinstance(data, dict) or set(data) != {"format", "key", "result", "digest"}:
        return None
    if data["format"] != _FORMAT or data["key"] != key or data["digest"] != _entry_digest(key, data["result"]):
        return None
    return _decode_result(data["result"])


_RESULT_FIELDS = frozenset({"status", "columns", "rows", "error", "elapsed_s", "truncated"})


def _decode_result(content: Any) -> ExecResult | None:
    """An entry's result, checked field by field (None: a shape no stored result has)."""
    if not isinstance(content, dict) or set(content) != _RESULT_FIELDS:
        return None
    status, columns, rows, error = content["status"], content["columns"], content["rows"], content["error"]
    elapsed, truncated = content["elapsed_s"], content["truncated"]
    if status not in _STORED_STATUSES or not isinstance(truncated, bool) or not _is_duration(elapsed):
        return None
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        return None
    if not isinstance(rows, list) or not all(isinstance(row, list) and len(row) == len(columns) for row in rows):
        return None
    # an answer has no error text; an error has nothing else
    if (error is not None) if status == "ok" else (not isinstance(error, str) or rows or columns or truncated):
        return None
    decoded = []
    for row in rows:
        cells = tuple(_decode_value(v) for v in row)
        if any(cell is _INVALID for cell in cells):
            return None
        decoded.append(cells)
    return ExecResult(status, tuple(columns), tuple(decoded), error, float(elapsed), truncated)


_INVALID: Any = object()


def _decode_value(value: Any) -> Any:
    """A stored cell as the SQLite value it was, or :data:`_INVALID`."""
    if value is None or isinstance(value, (str, float)) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, dict) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            data = base64.b64decode(value["b64"], validate=True)
        except (binascii.Error, ValueError):
            return _INVALID
        return data if base64.b64encode(data).decode("ascii") == value["b64"] else _INVALID
    return _INVALID


def _is_duration(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
