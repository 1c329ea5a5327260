"""A database's schema fingerprint: which databases share a schema under different names (BIRD and
Spider ship near-duplicate schemas as separate databases), for schema-disjoint splits
(``progress-sql split``) and the leakage guard (:mod:`progress_sql.data.leakage`).

What it hashes, and why: the set of tables, each with the set of its column names, read through
:func:`progress_sql.data.introspect.read_profile` (tables only: views derive from tables, and
``sqlite_*`` internals are not the schema). Every name is normalised: lower-cased, with everything
but letters and digits removed (``Singer_ID``, ``singer id`` and ``singerid`` are one name). Order
is ignored (tables and columns are sorted). Declared types, keys, constraints and the stored values
are left out on purpose: the copies of one schema under another database name differ in exactly
those (a column declared ``INT`` in one and ``INTEGER`` in the other, different rows), while a model
that has trained on the tables and columns has learnt the schema. The database name is left out
too: that is the point. Two databases with equal fingerprints are grouped as one schema.

>>> schema_fingerprint_of({"Singer": ["Singer_ID", "Name"], "concert": ["concert_ID"]})
'15c6874f99a0b644'
>>> schema_fingerprint_of({"CONCERT": ["Concert ID"], "singer": ["name", "singerid"]})
'15c6874f99a0b644'
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

from progress_sql.data.introspect import read_profile

_NOT_NAME = re.compile(r"[^0-9a-z]+")


def normalise_name(name: str) -> str:
    """A table or column name as the fingerprint compares it.

    >>> normalise_name("Singer_ID"), normalise_name("singer id")
    ('singerid', 'singerid')
    """
    return _NOT_NAME.sub("", name.lower())


def schema_fingerprint_of(tables: Mapping[str, Iterable[str]]) -> str:
    """The fingerprint of a schema given as table name -> column names (see the module docstring)."""
    lines = sorted(
        normalise_name(table) + "(" + ",".join(sorted({normalise_name(c) for c in columns})) + ")"
        for table, columns in tables.items()
    )
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]


def schema_fingerprint(db_path: str | Path) -> str:
    """The fingerprint of a SQLite file's schema (read-only introspection; DatasetError when the file
    is missing or unreadable). Cached per path and modification time."""
    path = Path(db_path).resolve()
    return _fingerprint(str(path), path.stat().st_mtime_ns if path.is_file() else -1)


@lru_cache(maxsize=4096)
def _fingerprint(path: str, _mtime_ns: int) -> str:
    profile = read_profile(path)
    return schema_fingerprint_of({t.name: [c.name for c in t.columns] for t in profile.tables.values()})


def database_fingerprints(db_paths: Mapping[str, str]) -> dict[str, str]:
    """db_id -> fingerprint for the databases whose file is present (db_id -> path given); absent
    databases are left out (callers group them by name alone)."""
    return {db_id: schema_fingerprint(path) for db_id, path in db_paths.items() if Path(path).is_file()}
