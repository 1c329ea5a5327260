"""Byte-identical diagnoses on real model output: every field of ``diagnose`` (status, F_struct, F_lex,
findings with locations, reason, feedback text, features) for the five published systems' Spider dev
predictions against their golds, without and with the database schema (SQLite's verdict, schema-qualified
columns): 10,340 diagnoses, compared with a committed snapshot.

The snapshot guards speed work on the ODT (issue 16's cost bound): a change meant to be faster must not
change a single diagnosis. A deliberate change of the ODT's behaviour rewrites it:

    PYTHONPATH=src:. .venv/bin/python tests/odt/test_snapshot.py --write
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from progress_sql.data.schema import Schema, read_schema
from progress_sql.odt import Diagnosis, diagnose, prepare_gold

SNAPSHOT = Path(__file__).parents[1] / "fixtures" / "odt_snapshot" / "spider_dev_diagnoses.jsonl.gz"
MODELS = (1, 2, 3, 4, 5)


def _record(diagnosis: Diagnosis) -> str:
    """One diagnosis as a JSON line (floats as ``repr``: exact)."""
    return json.dumps(
        [
            diagnosis.status,
            diagnosis.f_struct,
            diagnosis.f_lex,
            [str(finding) for finding in diagnosis.findings],
            list(diagnosis.tags),
            diagnosis.reason,
            diagnosis.feedback,
            sorted(diagnosis.features.items()),
        ],
        ensure_ascii=False,
    )


def snapshot_lines(data: Path) -> Iterator[str]:
    """``model schema line`` then the diagnosis, for every prediction, without and with the schema."""
    gold_lines = (data / "spider" / "dev_gold.sql").read_text(encoding="utf-8").splitlines()
    schemas: dict[str, Schema | None] = {}
    for db_id in sorted({line.rpartition("\t")[2] for line in gold_lines}):
        path = data / "spider" / "database" / db_id / f"{db_id}.sqlite"
        schemas[db_id] = read_schema(path) if path.is_file() else None
    plain = [prepare_gold(line.rpartition("\t")[0]) for line in gold_lines]
    with_schema = [prepare_gold(line.rpartition("\t")[0], schemas[line.rpartition("\t")[2]]) for line in gold_lines]
    for model in MODELS:
        preds = (data / "predictions" / "spider-dev" / f"model_{model}.txt").read_text(encoding="utf-8").splitlines()
        for kind, references in (("plain", plain), ("schema", with_schema)):
            for index, (pred, reference) in enumerate(zip(preds, references, strict=True)):
                yield f"{model} {kind} {index + 1}\t{_record(diagnose(pred, reference))}"


@pytest.mark.shared_data
def test_diagnoses_match_the_snapshot(shared_data: Path) -> None:
    with gzip.open(SNAPSHOT, "rt", encoding="utf-8") as handle:
        expected = handle.read().splitlines()
    actual = list(snapshot_lines(shared_data))
    assert len(actual) == len(expected) == 2 * len(MODELS) * 1034
    differing = [(want, got) for want, got in zip(expected, actual, strict=True) if want != got]
    assert not differing, f"{len(differing)} diagnoses differ; the first:\n{differing[0][0]}\n{differing[0][1]}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write   (rewrites {SNAPSHOT})")
    from tests.conftest import SHARED_DATA

    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same diagnoses give the same bytes.
    with open(SNAPSHOT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write("".join(f"{line}\n" for line in snapshot_lines(SHARED_DATA)).encode("utf-8"))
    print(f"wrote {SNAPSHOT}")
