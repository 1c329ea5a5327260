"""Read prediction files in every format the official evaluators and common runners write, detected
from the content or named with ``--format`` (docs/evaluation.md#prediction-files).

Each format is one :class:`PredictionFormat` in :data:`FORMATS` (detect, read, write). Whatever the
format, a file must give exactly one entry per example of the task: a missing, extra or repeated
entry is refused with the file and the first offending line, never shifted into place; a ``db_id``
given in the file must be the example's.

>>> sorted(FORMATS)
['bird-json', 'json-list', 'jsonl', 'lines', 'tsv']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.errors import DatasetError
from progress_sql.jsonio import JsonTextError, decode_at, dumps, dumps_line, read_text
from progress_sql.registry import lookup

#: Fields that may hold the SQL of a JSON record (the first string one is taken).
SQL_FIELDS: tuple[str, ...] = ("sql", "pred", "prediction", "predicted_sql")
#: The separator BIRD's evaluators expect between the SQL and the db_id in their JSON object.
BIRD_SEPARATOR = "\t----- bird -----\t"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # universal newlines, as the official evaluators' open() reads
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_BIRD_OBJECT_START = re.compile(r'\s*\{\s*(?:"\d+"\s*:|\})')
_MISMATCHES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class PredictionEntry:
    """One example's answers as the file gives them: its SQL (several for Vote@N), the line it
    starts on (1-based) and the ``db_id`` written beside it, if any."""

    samples: tuple[str, ...]
    line: int
    db_id: str | None = None


@dataclass(frozen=True, slots=True)
class PredictionFile:
    """A prediction file read for a task: one entry per example, in dataset order."""

    path: Path
    format: str
    entries: tuple[PredictionEntry, ...]

    def sample_lists(self) -> list[list[str]]:
        return [list(entry.samples) for entry in self.entries]

    def first_samples(self) -> list[str]:
        return [entry.samples[0] for entry in self.entries]


@dataclass(frozen=True, slots=True)
class _Placed:
    """An entry as read, before it is put in place: its explicit dataset index, if the file gives one."""

    entry: PredictionEntry
    index: int | None = None
    blank: bool = False  # a blank line of a line format: dropped when it trails past the task's end


class _Source:
    """A prediction file's text, with the line of any character offset."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self._breaks: list[int] | None = None

    def line_of(self, offset: int) -> int:
        if self._breaks is None:
            self._breaks = [m.end() for m in _LINE_BREAK.finditer(self.text)]
        low, high = 0, len(self._breaks)
        while low < high:  # how many line breaks end at or before offset
            middle = (low + high) // 2
            if self._breaks[middle] <= offset:
                low = middle + 1
            else:
                high = middle
        return low + 1

    def lines(self) -> list[str]:
        """Physical lines, as ``readlines()`` gives them (no empty piece after a final line break)."""
        lines = _LINE_BREAK.split(self.text)
        if lines and lines[-1] == "":
            lines.pop()
        return lines

    def first_char(self) -> str:
        stripped = self.text.lstrip()
        return stripped[:1]

    def error(self, line: int, message: str) -> DatasetError:
        return DatasetError(f"{self.path}: line {line}: {message}")


@dataclass(frozen=True, slots=True)
class PredictionFormat:
    """One prediction file format: how to recognise it, read it and write it.

    ``read(source, count)`` returns the entries in file order, with their explicit indices when the
    format has them; :func:`read_predictions` places them and checks counts and db_ids.
    ``write(samples, db_ids)`` is the file text of ``samples[i]`` for example ``i`` on ``db_ids[i]``
    (tests rewrite real files into every format with it; conversion tools may too).
    """

    name: str
    description: str
    detect: Callable[[_Source], bool]
    read: Callable[[_Source], list[_Placed]]
    write: Callable[[Sequence[Sequence[str]], Sequence[str]], str]


# --- line formats (the official Spider evaluator's) ---------------------------------------------------


def _starts_like_json(source: _Source) -> bool:
    return source.first_char() in ("{", "[")


def _detect_lines(source: _Source) -> bool:
    return not _starts_like_json(source)


def _detect_tsv(source: _Source) -> bool:
    return not _starts_like_json(source) and any("\t" in line.strip() for line in source.lines())


def _read_lines(source: _Source, *, with_db_id: bool) -> list[_Placed]:
    """One entry per line; the SQL is the stripped line's text before its first tab (the official
    evaluator's ``l.strip().split('\\t')``). A blank line is an empty answer (scored as an error),
    never skipped; blank lines past the task's last example are dropped (:func:`_place`)."""
    placed = []
    lines = source.lines()
    for number, line in enumerate(lines, start=1):
        parts = line.strip().split("\t")
        db_id = parts[1].strip() if len(parts) > 1 else None
        if with_db_id and db_id is None and parts[0]:
            raise source.error(number, "no <TAB>db_id after the SQL (format tsv: SQL<TAB>db_id on every line)")
        entry = PredictionEntry((parts[0],), number, db_id if with_db_id else None)
        placed.append(_Placed(entry, blank=not parts[0]))
    return placed


def _single(samples: Sequence[Sequence[str]], name: str) -> list[str]:
    if any(len(s) != 1 for s in samples):
        raise ValueError(f"format {name} holds one SQL per example")
    for sql in (s[0] for s in samples):
        if _LINE_BREAK.search(sql) or "\t" in sql:
            raise ValueError(f"format {name}: a SQL with a line break or a tab cannot be written: {sql!r}")
    return [s[0] for s in samples]


def _write_lines(samples: Sequence[Sequence[str]], db_ids: Sequence[str]) -> str:
    return "".join(f"{sql}\n" for sql in _single(samples, "lines"))


def _write_tsv(samples: Sequence[Sequence[str]], db_ids: Sequence[str]) -> str:
    return "".join(f"{sql}\t{db}\n" for sql, db in zip(_single(samples, "tsv"), db_ids, strict=True))


# --- JSON formats -------------------------------------------------------------------------------------


def _skip_space(text: str, offset: int) -> int:
    match = _JSON_SPACE.match(text, offset)
    return match.end() if match else offset


def _decode(source: _Source, offset: int) -> tuple[Any, int]:
    try:
        return decode_at(source.text, offset)
    except JsonTextError as error:
        raise source.error(source.line_of(error.position), error.reason) from None


def _members(source: _Source, opening: str) -> Iterator[tuple[int, str | None, Any]]:
    """(line, key, value) of each member of the top-level JSON object or array (key None in an
    array), read member by member so that every error names its line."""
    text = source.text
    closing = "}" if opening == "{" else "]"
    offset = _skip_space(text, 0)
    if text[offset : offset + 1] != opening:
        raise source.error(source.line_of(offset), f"expected {opening!r} at the start of the file")
    offset = _skip_space(text, offset + 1)
    if text[offset : offset + 1] == closing:
        offset += 1
    else:
        while True:
            line = source.line_of(offset)
            key = None
            if opening == "{":
                key, offset = _decode(source, offset)
                if not isinstance(key, str):
                    raise source.error(line, "an object key must be a string")
                offset = _skip_space(text, offset)
                if text[offset : offset + 1] != ":":
                    raise source.error(source.line_of(offset), "expected ':' after the key")
                offset = _skip_space(text, offset + 1)
            value, offset = _decode(source, offset)
            yield line, key, value
            offset = _skip_space(text, offset)
            separator = text[offset : offset + 1]
            offset += 1
            if separator == closing:
                break
            if separator != ",":
                raise source.error(source.line_of(offset - 1), f"expected ',' or {closing!r}")
            offset = _skip_space(text, offset)
    rest = _skip_space(text, offset)
    if rest < len(text):
        raise source.error(source.line_of(rest), "text after the end of the JSON value")


def _index(source: _Source, line: int, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise source.error(line, f"index {value!r} is not a dataset index (an integer >= 0)")
    return value


def _samples_of(source: _Source, line: int, value: Any) -> tuple[str, ...]:
    """The answers a JSON value gives: a string, null (an empty answer), a non-empty list of strings,
    or a record with the SQL under one of :data:`SQL_FIELDS` or a ``samples`` list."""
    if value is None:
        return ("",)
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list):
        if not value or not all(isinstance(s, str) for s in value):
            raise source.error(line, "'samples' must be a non-empty list of SQL strings")
        return tuple(value)
    if isinstance(value, dict):
        if "samples" in value:
            if not isinstance(value["samples"], list):
                raise source.error(line, "'samples' must be a non-empty list of SQL strings")
            return _samples_of(source, line, value["samples"])
        sql = next((value[k] for k in SQL_FIELDS if isinstance(value.get(k), str)), None)
        if sql is None:
            raise source.error(line, f"no SQL field ({', '.join(SQL_FIELDS)}) and no 'samples'")
        return (sql,)
    raise source.error(line, f"expected SQL (a string, a list of strings or a record), got {type(value).__name__}")


def _record(source: _Source, line: int, value: Any) -> _Placed:
    samples = _samples_of(source, line, value)
    if not isinstance(value, dict):
        return _Placed(PredictionEntry(samples, line))
    index = _index(source, line, value["index"]) if "index" in value else None
    db_id = value.get("db_id") if isinstance(value.get("db_id"), str) else None
    return _Placed(PredictionEntry(samples, line, db_id), index)


def _detect_bird(source: _Source) -> bool:
    return _BIRD_OBJECT_START.match(source.text) is not None


def _read_bird(source: _Source) -> list[_Placed]:
    """BIRD's ``{"<index>": "SQL\\t----- bird -----\\t<db_id>"}``. BIRD's own reader takes the values
    in file order and ignores the keys; here the key is the index, so a reordered file is still read
    right, and a gap or a repeat is refused. A value without the separator is the SQL stripped (as
    BIRD reads it); null is an empty answer."""
    placed = []
    for line, key, value in _members(source, "{"):
        assert key is not None
        if not key.isdigit():
            raise source.error(line, f"key {key!r} is not a dataset index")
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise source.error(line, f"value of {key!r} is not a string (SQL\\t----- bird -----\\tdb_id)")
        parts = value.split(BIRD_SEPARATOR)
        sql, db_id = (parts[0], parts[1]) if len(parts) == 2 else (value.strip(), None)
        placed.append(_Placed(PredictionEntry((sql,), line, db_id), int(key)))
    return placed


def _write_bird(samples: Sequence[Sequence[str]], db_ids: Sequence[str]) -> str:
    if any(len(s) != 1 for s in samples):
        raise ValueError("format bird-json holds one SQL per example")
    data = {str(i): f"{s[0]}{BIRD_SEPARATOR}{db}" for i, (s, db) in enumerate(zip(samples, db_ids, strict=True))}
    return dumps(data, indent=4)


def _detect_json_list(source: _Source) -> bool:
    return source.first_char() == "["


def _read_json_list(source: _Source) -> list[_Placed]:
    """A JSON array, one item per example: a SQL string, a list of samples, null, or a record as in
    JSONL (which may give its ``index``)."""
    return [_record(source, line, value) for line, _key, value in _members(source, "[")]


def _write_json_list(samples: Sequence[Sequence[str]], db_ids: Sequence[str]) -> str:
    items = [s[0] if len(s) == 1 else list(s) for s in samples]
    return dumps(items, indent=1)


def _first_line_is_object(source: _Source) -> bool:
    line = next((line for line in source.lines() if line.strip()), "")
    try:
        return isinstance(decode_at(line, len(line) - len(line.lstrip()))[0], dict)
    except JsonTextError:
        return False


def _read_jsonl(source: _Source) -> list[_Placed]:
    """One JSON record per non-blank line: the SQL under one of :data:`SQL_FIELDS` or several under
    ``samples``, optionally its dataset ``index`` and ``db_id``."""
    placed = []
    for number, line in enumerate(source.lines(), start=1):
        if not line.strip():
            continue
        start = len(line) - len(line.lstrip())
        try:
            value, end = decode_at(line, start)
        except JsonTextError as error:
            raise source.error(number, error.reason) from None
        if line[end:].strip():
            raise source.error(number, "text after the end of the JSON value")
        if not isinstance(value, dict):
            raise source.error(number, "not a JSON object")
        placed.append(_record(source, number, value))
    return placed


def _write_jsonl(samples: Sequence[Sequence[str]], db_ids: Sequence[str]) -> str:
    lines = []
    for index, (items, db_id) in enumerate(zip(samples, db_ids, strict=True)):
        body: dict[str, Any] = {"sql": items[0]} if len(items) == 1 else {"samples": list(items)}
        lines.append(dumps_line({"index": index, **body, "db_id": db_id}))
    return "".join(f"{line}\n" for line in lines)


#: Every format, in detection order: the first whose ``detect`` accepts a file reads it.
FORMATS: dict[str, PredictionFormat] = {
    f.name: f
    for f in (
        PredictionFormat(
            "bird-json", 'BIRD\'s JSON object {"<index>": "SQL\\t----- bird -----\\t<db_id>"}', _detect_bird,
            _read_bird, _write_bird,
        ),
        PredictionFormat(
            "json-list", "a JSON list, one item per example: SQL, [samples], null or a record", _detect_json_list,
            _read_json_list, _write_json_list,
        ),
        PredictionFormat(
            "jsonl", "JSON lines: {sql | samples, index?, db_id?}", _first_line_is_object, _read_jsonl, _write_jsonl,
        ),
        PredictionFormat(
            "tsv", "SQL<TAB>db_id per line, in dataset order", _detect_tsv,
            lambda source: _read_lines(source, with_db_id=True), _write_tsv,
        ),
        PredictionFormat(
            "lines", "one SQL per line, in dataset order", _detect_lines,
            lambda source: _read_lines(source, with_db_id=False), _write_lines,
        ),
    )
}  # fmt: skip


def _read_text(file: Path) -> str:
    text = read_text(file, "predictions file")
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise DatasetError(f"{file}: line {line}: a NUL byte: this is a binary file, not predictions")
    return text


def detect_format(source: _Source) -> PredictionFormat:
    """The first format of :data:`FORMATS` that accepts ``source``; DatasetError when none does."""
    for candidate in FORMATS.values():
        if candidate.detect(source):
            return candidate
    line = source.line_of(len(source.text) - len(source.text.lstrip()))
    raise source.error(
        line,
        f"unknown prediction format: it starts with {source.first_char()!r} but is neither BIRD's JSON object "
        '({"<index>": "SQL..."}), a JSON list nor JSON lines; name one with --format '
        f"({', '.join(FORMATS)})",
    )


def _entries(n: int) -> str:
    return f"{n} {'entry' if n == 1 else 'entries'}"


def _place(source: _Source, placed: list[_Placed], count: int) -> list[PredictionEntry]:
    """Entries in dataset order; the first entry out of place is refused with its line."""
    if all(p.index is None for p in placed):
        placed = list(placed)
        while len(placed) > count and placed[-1].blank:
            placed.pop()
        if len(placed) > count:
            raise source.error(placed[count].entry.line, f"entry {count + 1}, but the task has {count} examples")
        if len(placed) < count:
            last = f"the last at line {placed[-1].entry.line}" if placed else "none"
            raise DatasetError(
                f"{source.path}: {_entries(len(placed))} ({last}) for {count} examples: "
                f"example {len(placed)} and later have no prediction"
            )
        return [p.entry for p in placed]
    found: dict[int, PredictionEntry] = {}
    for position, item in enumerate(placed):
        index = position if item.index is None else item.index
        if index >= count:
            raise source.error(item.entry.line, f"index {index} is outside the task's examples 0..{count - 1}")
        if index in found:
            raise source.error(item.entry.line, f"index {index} again (first at line {found[index].line})")
        found[index] = item.entry
    if len(found) < count:
        missing = next(i for i in range(count) if i not in found)
        raise DatasetError(f"{source.path}: {_entries(len(found))} for {count} examples: no entry for index {missing}")
    return [found[i] for i in range(count)]


def _check_db_ids(source: _Source, entries: Sequence[PredictionEntry], db_ids: Sequence[str]) -> None:
    wrong = [(i, e) for i, (e, db) in enumerate(zip(entries, db_ids, strict=True)) if e.db_id not in (None, db)]
    if wrong:
        shown = "; ".join(
            f"line {e.line}: db_id {e.db_id!r}, but example {i} is on {db_ids[i]!r}"
            for i, e in wrong[:_MISMATCHES_SHOWN]
        )
        more = f" (and {len(wrong) - _MISMATCHES_SHOWN} more)" if len(wrong) > _MISMATCHES_SHOWN else ""
        raise DatasetError(f"{source.path}: {len(wrong)} db_id mismatches: {shown}{more}")


def read_predictions(path: str | Path, expected: int | Sequence[str], format: str | None = None) -> PredictionFile:
    """Read ``path`` for a task of ``expected`` examples (their count, or their db_ids in order, which
    the db_ids written in the file must equal) in ``format`` (None: detected). DatasetError names the
    file and line of anything wrong; ConfigError an unknown format name."""
    file = Path(path)
    chosen = None if format is None else lookup(FORMATS, format, "prediction format")
    source = _Source(file, _read_text(file))
    if chosen is None:
        chosen = detect_format(source)
    count = expected if isinstance(expected, int) else len(expected)
    entries = _place(source, chosen.read(source), count)
    if not isinstance(expected, int):
        _check_db_ids(source, entries, expected)
    return PredictionFile(file, chosen.name, tuple(entries))


def write_predictions(path: str | Path, samples: Sequence[Sequence[str]], db_ids: Sequence[str], format: str) -> Path:
    """Write ``samples[i]`` for example ``i`` (on ``db_ids[i]``) in ``format``; returns ``path``."""
    file = Path(path)
    file.write_text(lookup(FORMATS, format, "prediction format").write(samples, db_ids), encoding="utf-8")
    return file


def load_predictions(path: str | Path, count: int) -> list[str]:
    """The ``count`` predictions of ``path`` (any format; the first sample where there are several)."""
    return read_predictions(path, count).first_samples()


def load_prediction_samples(path: str | Path, count: int) -> list[list[str]]:
    """Every example's answers (several for Vote@N and pass@k), in dataset order."""
    return read_predictions(path, count).sample_lists()
