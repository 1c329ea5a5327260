"""JSON as this package reads and writes it: one reader for every JSON and JSON Lines input (a file,
a run folder, a cache entry) that turns every way a text can fail to be JSON (syntax, nesting
depth, an integer past Python's digit limit, bytes that are not UTF-8) into one DatasetError line,
and one encoder for every record written, which survives any string a model produced.

JSON Lines are split on ``"\\n"`` alone: U+2028, U+2029 and U+0085 are line ends to
``str.splitlines`` but not to JSON Lines, so the encoder escapes them and the reader never splits
on them. A lone surrogate (``"\\ud800"`` in a JSON string) is read as it is and written back as
its escape, so that every string round-trips; two adjacent lone surrogates that form a pair are
read back as the one character they encode (JSON cannot tell them apart).

>>> line = dumps_line({"sql": "SELECT '\\ud800'", "q": "a\\u2028b"})
>>> line
'{"sql": "SELECT \\'\\\\ud800\\'", "q": "a\\\\u2028b"}'
>>> parse_lines(line + "\\n", "demo") == [{"sql": "SELECT '\\ud800'", "q": "a\\u2028b"}]
True
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from progress_sql.errors import DatasetError

_DECODER = json.JSONDecoder()
#: What ``str.splitlines`` takes for a line end that JSON Lines do not, and every surrogate code point
#: (in a Python string from a JSON text, a surrogate is always a lone one): written as escapes.
_UNSAFE = re.compile("[\x85\u2028\u2029\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps_line(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """``value`` as one JSON Lines record: UTF-8 text kept readable, every character that could end a
    line for some reader or fail to encode as UTF-8 escaped; ``default``: ``json.dumps``'s."""
    return _UNSAFE.sub(_escape, json.dumps(value, ensure_ascii=False, default=default))


def dumps(value: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """``value`` as pretty JSON (a trailing newline), escaped as :func:`dumps_line` escapes."""
    return _UNSAFE.sub(_escape, json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)) + "\n"


def escape_surrogates(text: str) -> str:
    """``text`` with each surrogate code point written as its ``\\uXXXX`` escape (for a report or a
    terminal: text that must encode as UTF-8).

    >>> escape_surrogates("a\\ud800b")
    'a\\\\ud800b'
    """
    return _SURROGATE.sub(_escape, text)


def surrogate_refusal(text: str) -> str | None:
    """Why ``text`` cannot be handed to a database or a parser that reads UTF-8 (a lone surrogate, which
    a JSON string may hold), or None.

    >>> surrogate_refusal("SELECT 1"), surrogate_refusal("SELECT '\\udc80'")
    (None, 'not UTF-8 text: a lone surrogate (U+DC80) at character 9')
    """
    found = _SURROGATE.search(text)
    return (
        None
        if found is None
        else f"not UTF-8 text: a lone surrogate (U+{ord(found.group()):04X}) at character {found.start() + 1}"
    )


class JsonTextError(ValueError):
    """Why a text is not JSON this package reads (one line), and the character where it fails."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.position = position


def decode_at(text: str, offset: int = 0) -> tuple[Any, int]:
    """The JSON value that starts at ``offset`` of ``text`` and the offset after it; JsonTextError for
    every failure (the decoder's own, a nesting too deep for the reader, an integer too long)."""
    try:
        return _DECODER.raw_decode(text, offset)
    except json.JSONDecodeError as error:
        raise JsonTextError(f"not valid JSON: {error.msg}", error.pos) from None
    except RecursionError:
        raise JsonTextError("not readable JSON: nested too deeply", offset) from None
    except ValueError as error:  # an integer past sys.get_int_max_str_digits()
        raise JsonTextError(f"not readable JSON: {str(error).split(':')[0]}", offset) from None


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def parse(text: str, where: str) -> Any:
    """The one JSON value of ``text``; DatasetError ``where: line N: why`` when it is anything else."""
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        value, end = decode_at(text, start)
    except JsonTextError as error:
        raise DatasetError(f"{where}: line {_line_of(text, error.position)}: {error.reason}") from None
    if text[end:].strip(" \t\n\r"):
        raise DatasetError(f"{where}: line {_line_of(text, end)}: text after the end of the JSON value")
    return value


def split_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split on ``"\\n"`` alone (a ``"\\r"`` before it dropped), never
    on the other characters ``str.splitlines`` takes for line ends.

    >>> split_lines('{"a": 1}\\r\\n{"b": "x\\u2028y"}\\n')
    ['{"a": 1}', '{"b": "x\\u2028y"}']
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def numbered_lines(text: str, where: str, *, objects: bool = False) -> list[tuple[int, Any]]:
    """Each value of a JSON Lines text with its line number (1-based; blank lines skipped; with
    ``objects``, each a JSON object); DatasetError ``where: line N: why``."""
    values = []
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        try:
            value, end = decode_at(line, len(line) - len(line.lstrip()))
        except JsonTextError as error:
            raise DatasetError(f"{where}: line {number}: {error.reason}") from None
        if line[end:].strip():
            raise DatasetError(f"{where}: line {number}: text after the end of the JSON value")
        if objects and not isinstance(value, dict):
            raise DatasetError(f"{where}: line {number}: not a JSON object")
        values.append((number, value))
    return values


def parse_lines(text: str, where: str, *, objects: bool = False) -> list[Any]:
    """The values of a JSON Lines text (:func:`numbered_lines` without the numbers)."""
    return [value for _, value in numbered_lines(text, where, objects=objects)]


def read_text(path: Path, what: str = "file") -> str:
    """``path`` as UTF-8 text (a leading byte-order mark dropped); DatasetError when it is missing,
    unreadable or not UTF-8 (naming the line of the first bad byte)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(f"{what} not found: {path}") from None
    except OSError as error:
        raise DatasetError(f"cannot read {what} {path}: {error.strerror or error}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DatasetError(f"{path}: line {line}: not UTF-8 text (byte 0x{data[error.start]:02x})") from None


def read_json(path: Path, what: str = "file") -> Any:
    """The JSON value of the file ``path`` (:func:`read_text`, :func:`parse`)."""
    return parse(read_text(path, what), str(path))


def read_json_lines(path: Path, what: str = "file", *, objects: bool = False) -> list[Any]:
    """The values of the JSON Lines file ``path`` (:func:`read_text`, :func:`parse_lines`)."""
    return parse_lines(read_text(path, what), str(path), objects=objects)


def write_atomic(path: Path, chunks: Iterable[str]) -> Path:
    """Write ``chunks`` (UTF-8) to a temporary file beside ``path`` and rename it into place, so that
    ``path`` is either absent, the old file or the whole new one; returns ``path``."""
    temporary = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            for chunk in chunks:
                handle.write(chunk)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path
