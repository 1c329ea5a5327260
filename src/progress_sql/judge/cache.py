"""Gold results, cached so that a gold query runs once per example however many predictions are scored;
the key and where results live: docs/semantics.md#the-gold-cache."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pickle
import threading
from collections.abc import Mapping
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any

from progress_sql.execution.engines import engine_of
from progress_sql.execution.executor import ExecLimits
from progress_sql.judge.sqltext import tokens
from progress_sql.types import ExecResult, SQLValue

_FORMAT = 2  # 2: keys name the engine


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
            "preset": json.loads(preset_json),
            "limits": asdict(limits),
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


class GoldCache:
    """In-memory (and optionally on-disk) map from :func:`cache_key` to :class:`ExecResult`."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self._memory: dict[str, ExecResult] = {}
        self._directory = Path(directory) if directory is not None else None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._memory)

    def _file(self, key: str) -> Path:
        assert self._directory is not None
        return self._directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> ExecResult | None:
        with self._lock:
            found = self._memory.get(key)
        if found is None and self._directory is not None:
            found = _read(self._file(key))
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
        damaged or written by another format); always None without a directory."""
        if self._directory is None:
            return None
        try:
            # The cache directory is the user's own, written by this class: its pickles are trusted.
            data = pickle.loads(self._reference_file(key).read_bytes())
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return None
        if not isinstance(data, tuple) or len(data) != 2 or data[0] != _FORMAT:
            return None
        return data[1]

    def put_reference(self, key: str, value: Any) -> None:
        """Keep a gold's prepared analysis (its ODT tree, bigrams, hardness) on disk for later runs
        (nothing without a directory; a value that cannot be pickled is not kept)."""
        if self._directory is None:
            return
        path = self._reference_file(key)
        try:
            payload = pickle.dumps((_FORMAT, value), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".tmp{os.getpid()}")
        temporary.write_bytes(payload)
        os.replace(temporary, path)  # atomic: a reader never sees half a file

    def _reference_file(self, key: str) -> Path:
        assert self._directory is not None
        return self._directory / "references" / key[:2] / f"{key}.pickle"

    def put(self, key: str, result: ExecResult) -> None:
        with self._lock:
            self._memory[key] = result
        if self._directory is not None and result.status != "timeout":
            path = self._file(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".tmp{os.getpid()}")
            temporary.write_text(json.dumps(_encode(result)), encoding="utf-8")
            os.replace(temporary, path)  # atomic: a reader never sees half a file


def _encode_value(value: SQLValue) -> Any:
    if isinstance(value, bytes):
        return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def _decode_value(value: Any) -> SQLValue:
    if isinstance(value, dict):
        return base64.b64decode(value["b64"])
    return value  # type: ignore[no-any-return]


def _encode(result: ExecResult) -> dict[str, Any]:
    return {
        "format": _FORMAT,
        "status": result.status,
        "columns": list(result.columns),
        "rows": [[_encode_value(v) for v in row] for row in result.rows],
        "error": result.error,
        "elapsed_s": result.elapsed_s,
        "truncated": result.truncated,
    }


def _read(path: Path) -> ExecResult | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent or damaged: run the gold again
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    return ExecResult(
        data["status"],
        columns=tuple(data["columns"]),
        rows=tuple(tuple(_decode_value(v) for v in row) for row in data["rows"]),
        error=data["error"],
        elapsed_s=data["elapsed_s"],
        truncated=data["truncated"],
    )
