"""From examples to a training file: the environment's own opening messages, rows, the file, its
manifest; absent databases and moved database paths: docs/export.md#what-is-written."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from progress_sql.data.ddl import SCHEMA_PROFILES, SchemaProfile, db_details
from progress_sql.errors import ConfigError
from progress_sql.execution.engines import engine_of
from progress_sql.export.formats import ExportFormat, ExportItem, build_rows, write_rows
from progress_sql.odt import OdtConfig
from progress_sql.prompts import opening_messages
from progress_sql.types import Example

#: Version of the exported row shapes; recorded in every manifest.
EXPORT_VERSION = "1"


def parse_path_map(text: str) -> tuple[str, str]:
    """``OLD=NEW`` -> ``(absolute OLD, NEW)``; a ConfigError says what is wrong.

    >>> parse_path_map("/data/spider=/mnt/spider")
    ('/data/spider', '/mnt/spider')
    """
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise ConfigError(f"a database path map is OLD=NEW (a folder here = the same folder there), got {text!r}")
    return str(Path(old).absolute()), new


def relocate(db_path: str, path_maps: Sequence[tuple[str, str]]) -> str:
    """``db_path`` with the first matching folder prefix replaced (whole path components only).

    >>> relocate("/data/spider/database/pets_1/pets_1.sqlite", [("/data/spider", "/mnt/spider")])
    '/mnt/spider/database/pets_1/pets_1.sqlite'
    >>> relocate("/data/spider2/x.sqlite", [("/data/spider", "/mnt/spider")])
    '/data/spider2/x.sqlite'
    """
    for old, new in path_maps:
        old = old.rstrip("/")
        if db_path == old or db_path.startswith(old + "/"):
            return new.rstrip("/") + db_path[len(old) :]
    return db_path


def export_items(
    drawn: Sequence[tuple[str, Example]],
    *,
    schema_profile: SchemaProfile = "full",
    db_engine: str = OdtConfig().db_engine,
    path_maps: Sequence[tuple[str, str]] = (),
    suite: str | None = None,
    on_item: Callable[[], None] | None = None,
    backend_db: str | None = None,
    allow_ask: bool = False,
) -> list[ExportItem]:
    """``(source name, example)`` pairs -> items with their opening messages (schema read once per
    database); ``path_maps`` move the written database paths and the ``suite`` folder (:func:`relocate`)
    every row carries. With ``backend_db`` the prompts name its engine and the rows carry its dialect and
    location (without a password); ``allow_ask`` offers the clarifying-question action in the system
    prompt (``TaskTermsConfig.offer_ask``)."""
    dialect, location = "sqlite", None
    if backend_db is not None:
        engine = engine_of(backend_db)
        dialect, location, db_engine = engine.dialect, engine.public_location(backend_db), engine.display_name
    if schema_profile not in SCHEMA_PROFILES:
        raise ConfigError(f"schema profile must be one of {', '.join(SCHEMA_PROFILES)}, got {schema_profile!r}")
    details: dict[str, str] = {}
    if suite is not None and not Path(suite).is_dir():
        raise ConfigError(f"test-suite folder not found: {suite} (build one with progress-sql build-suite)")
    row_suite = None if suite is None else relocate(str(Path(suite).absolute()), path_maps)
    items = []
    for source, example in drawn:
        example = replace(example, db_path=str(Path(example.db_path).absolute()))  # trainers run elsewhere
        verified = Path(example.db_path).is_file()
        if verified and example.db_path not in details:
            details[example.db_path] = db_details(example.db_path, schema_profile)
        schema = details[example.db_path] if verified else ""
        messages = opening_messages(example, schema, db_engine=db_engine, allow_ask=allow_ask)
        example = replace(example, db_path=relocate(example.db_path, path_maps))
        items.append(
            ExportItem(
                example,
                source,
                tuple(messages),
                verified,
                suite=row_suite,
                dialect=dialect,
                backend_db=location,
                offer_ask=allow_ask,
            )
        )
        if on_item is not None:
            on_item()
    return items


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What one export wrote: rows per source, verified and unverified, what the filter dropped."""

    format: str
    path: str
    rows: int
    per_source: dict[str, int]
    unverified: dict[str, int]
    filter: str
    dropped: int
    settings: dict[str, Any] = field(default_factory=dict)


def manifest_path(out: Path) -> Path:
    """``train.parquet`` -> ``train.manifest.json`` beside it."""
    return out.with_name(f"{out.stem}.manifest.json")


def dropped_path(out: Path) -> Path:
    """``train.parquet`` -> ``train.dropped.jsonl`` beside it (the filter's dropped examples)."""
    return out.with_name(f"{out.stem}.dropped.jsonl")


def write_export(
    items: Sequence[ExportItem],
    fmt: ExportFormat,
    out: Path,
    *,
    filter_name: str = "none",
    dropped: int = 0,
    settings: dict[str, Any] | None = None,
) -> ExportSummary:
    """Write the rows of ``items`` to ``out`` in ``fmt``; return the summary the manifest records."""
    write_rows(build_rows(items, fmt), out)
    return ExportSummary(
        format=fmt.name,
        path=str(out),
        rows=len(items),
        per_source=dict(Counter(item.source for item in items)),
        unverified=dict(Counter(item.source for item in items if not item.verified)),
        filter=filter_name,
        dropped=dropped,
        settings=dict(settings or {}),
    )
