"""Read prediction files: one SQL per line in dataset order (Spider style) or JSONL records; the formats:
docs/evaluation.md#prediction-files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from progress_sql.errors import DatasetError

_SQL_FIELDS = ("sql", "pred", "prediction", "predicted_sql")


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise DatasetError(f"predictions file not found: {file}") from None
    except OSError as error:
        raise DatasetError(f"cannot read predictions file {file}: {error}") from None


def _json_lines(file: Path, text: str) -> Iterator[tuple[int, str, Any]]:
    """(position, line, value) of each non-blank line, parsed as it is reached (errors come in line order)."""
    for position, line in enumerate(line for line in text.splitlines() if line.strip()):
        try:
            yield position, line, json.loads(line)
        except ValueError as error:
            raise DatasetError(f"{file}: line {position + 1} is not JSON: {error}") from None


def load_predictions(path: str | Path, count: int) -> list[str]:
    """The ``count`` predictions of ``path``, in dataset order; a clear DatasetError otherwise."""
    file = Path(path)
    text = _read(file)
    if file.suffix == ".jsonl":
        return _from_jsonl(file, text, count)
    lines = text.splitlines()
    while lines and not lines[-1].strip() and len(lines) > count:
        lines.pop()  # trailing blank lines
    if len(lines) != count:
        raise DatasetError(f"{file}: {len(lines)} predictions for {count} examples (one SQL per line, in order)")
    return [line.strip().split("\t")[0] for line in lines]


def _from_jsonl(file: Path, text: str, count: int) -> list[str]:
    found: dict[int, str] = {}
    for position, _line, record in _json_lines(file, text):
        if not isinstance(record, dict):
            raise DatasetError(f"{file}: line {position + 1} is not a JSON object")
        sql = next((record[k] for k in _SQL_FIELDS if isinstance(record.get(k), str)), None)
        if sql is None:
            raise DatasetError(f"{file}: line {position + 1} has no SQL field ({', '.join(_SQL_FIELDS)})")
        index = record.get("index", position)
        if not isinstance(index, int) or not 0 <= index < count:
            raise DatasetError(f"{file}: line {position + 1} has index {index!r} outside 0..{count - 1}")
        if index in found:
            raise DatasetError(f"{file}: index {index} appears twice")
        found[index] = sql
    if len(found) != count:
        missing = sorted(set(range(count)) - set(found))[:5]
        raise DatasetError(f"{file}: {len(found)} predictions for {count} examples (missing e.g. {missing})")
    return [found[i] for i in range(count)]


def load_prediction_samples(path: str | Path, count: int) -> list[list[str]]:
    """Like :func:`load_predictions`, but a JSONL record may carry several answers under
    ``samples`` (a list of SQL strings, for Vote@N and pass@k); other records give one."""
    file = Path(path)
    if file.suffix != ".jsonl":
        return [[sql] for sql in load_predictions(file, count)]
    text = _read(file)
    found: dict[int, list[str]] = {}
    singles: list[str] = []
    for position, line, record in _json_lines(file, text):
        samples = record.get("samples") if isinstance(record, dict) else None
        if samples is None:
            singles.append(line)
            continue
        if not isinstance(samples, list) or not samples or not all(isinstance(s, str) for s in samples):
            raise DatasetError(f"{file}: line {position + 1}: 'samples' must be a non-empty list of SQL strings")
        index = record.get("index", position)
        if not isinstance(index, int) or not 0 <= index < count or index in found:
            raise DatasetError(f"{file}: line {position + 1} has a bad or repeated index {index!r}")
        found[index] = samples
    if not found:
        return [[sql] for sql in load_predictions(file, count)]
    if singles or len(found) != count:
        raise DatasetError(f"{file}: {len(found)} sample lists for {count} examples (every line needs 'samples')")
    return [found[i] for i in range(count)]
