"""The suite folder's ``manifest.json`` (docs/testsuite.md#the-suite-folder) and :func:`suite_lookup`,
which turns a suite folder into the value the gold store judges with
(:data:`progress_sql.judge.gold.SuiteLookup`)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from progress_sql.errors import DatasetError
from progress_sql.jsonio import read_json
from progress_sql.types import Example

if TYPE_CHECKING:  # annotations only: reading a manifest needs none of the suite builder
    from progress_sql.testsuite.distill import SchemaSuite, SuiteConfig

MANIFEST = "manifest.json"
FORMAT = 1


def coverage_summary(suites: Sequence[SchemaSuite]) -> dict[str, Any]:
    """Mean, quantiles and a histogram of per-gold neighbour coverage over every gold with neighbours."""
    values = sorted(g.coverage for s in suites for g in s.golds if g.coverage is not None)
    golds = sum(len(s.golds) for s in suites)
    if not values:
        return {"golds": golds, "with_neighbours": 0, "mean": None}
    bins = {"<0.5": 0, "0.5-0.8": 0, "0.8-0.9": 0, "0.9-1.0": 0, "1.0": 0}
    for value in values:
        key = "1.0" if value >= 1 else "0.9-1.0" if value >= 0.9 else "0.8-0.9" if value >= 0.8 else "0.5-0.8"
        bins["<0.5" if value < 0.5 else key] += 1
    quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {
        "golds": golds,
        "with_neighbours": len(values),
        "mean": round(statistics.fmean(values), 6),
        "min": values[0],
        "p25": round(quartiles[0], 6),
        "median": round(quartiles[1], 6),
        "p75": round(quartiles[2], 6),
        "histogram": bins,
        "neighbours": sum(g.neighbours for s in suites for g in s.golds),
        "golds_with_problems": sum(g.problem is not None for s in suites for g in s.golds),
        "golds_whose_answer_changes": sum(g.answer_changes for s in suites for g in s.golds),
    }


def manifest_dict(config: SuiteConfig, suites: Sequence[SchemaSuite], versions: Mapping[str, str]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "config": asdict(config),
        "versions": dict(versions),
        "coverage": coverage_summary(suites),
        "databases": {
            s.db_id: {
                "original": s.original,
                "suite": list(s.databases),
                "pool": s.pool_size,
                "invalid_foreign_keys": s.invalid_foreign_keys,
                "golds": [asdict(g) | {"databases": list(g.databases)} for g in s.golds],
            }
            for s in sorted(suites, key=lambda s: s.db_id)
        },
    }


def write_manifest(
    out: str | Path, config: SuiteConfig, suites: Sequence[SchemaSuite], versions: Mapping[str, str]
) -> Path:
    path = Path(out) / MANIFEST
    text = json.dumps(manifest_dict(config, suites, versions), indent=2, ensure_ascii=False, sort_keys=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


@lru_cache(maxsize=8)
def _gold_databases(manifest: Path, mtime_ns: int) -> dict[tuple[str, str], tuple[str, ...]]:
    data = read_json(manifest, "suite manifest")
    try:
        return {
            (db_id, gold["sql"]): tuple(gold["databases"])
            for db_id, entry in data["databases"].items()
            for gold in entry["golds"]
        }
    except (KeyError, TypeError, AttributeError) as error:
        raise DatasetError(f"cannot read the suite manifest {manifest}: {error!r}") from error


def gold_databases(suite: Path, db_id: str, gold_sql: str) -> tuple[str, ...] | None:
    """The suite files (names) the manifest assigns to this gold, or None without a manifest entry."""
    manifest = suite / MANIFEST
    if not manifest.is_file():
        return None
    return _gold_databases(manifest, manifest.stat().st_mtime_ns).get((db_id, gold_sql))


def suite_databases(suite: Path | None, db_id: str, gold_sql: str | None = None) -> list[str]:
    """The test-suite databases of ``db_id``: ``suite/<db_id>/*.sqlite``, sorted; when the suite's
    manifest (``progress-sql build-suite``) lists ``gold_sql``, only the files it assigns to that
    gold (those on which it runs and does not depend on scan order), in the manifest's order."""
    if suite is None:
        return []
    if gold_sql is not None:
        assigned = gold_databases(suite, db_id, gold_sql)
        if assigned is not None:
            return [str(suite / db_id / name) for name in assigned if (suite / db_id / name).is_file()]
    return [str(p) for p in sorted((suite / db_id).glob("*.sqlite"))]


@dataclass(frozen=True, slots=True)
class SuiteFolder:
    """A suite folder as a :data:`~progress_sql.judge.gold.SuiteLookup`: called with an example, the
    suite databases of its gold, or None when the folder has nothing for its database (no
    ``<db_id>/`` folder). An empty tuple means the suite covers the database but assigns this gold
    no file, so the suite is the original database alone. Equal folders make equal lookups."""

    folder: Path

    def __call__(self, example: Example) -> tuple[str, ...] | None:
        databases = suite_databases(self.folder, example.db_id, example.gold_sql)
        if not databases and not (self.folder / example.db_id).is_dir():
            return None
        return tuple(databases)


def suite_lookup(folder: str | Path) -> SuiteFolder:
    """The suite lookup of a folder built by ``progress-sql build-suite``."""
    return SuiteFolder(Path(folder))
