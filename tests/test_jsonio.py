"""The one JSON reader and record encoder (progress_sql/jsonio.py; issue 36 items 4 and 6): every
string round-trips through a JSON Lines file, every way a text fails to be JSON is one DatasetError
line, and a file is written whole or not at all."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from progress_sql import jsonio
from progress_sql.errors import DatasetError
from progress_sql.runfolder import RunFolder, RunSummary, write_jsonl

#: Any code point, lone surrogates and the separators ``str.splitlines`` splits on included.
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())


def _no_surrogate_pair(text: str) -> bool:
    """JSON cannot tell a high surrogate followed by a low one from the character they encode."""
    return not any("\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff" for a, b in pairwise(text))


ANY_TEXT = st.text(ANY_CHAR, max_size=40).filter(_no_surrogate_pair)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(ANY_TEXT, ANY_TEXT | st.integers() | st.none(), max_size=3), max_size=4))
def test_every_string_round_trips_through_json_lines(records: list[dict[str, object]]) -> None:
    text = "".join(jsonio.dumps_line(record) + "\n" for record in records)
    text.encode("utf-8")  # always UTF-8: a lone surrogate is written as its escape
    assert text.splitlines() == text.split("\n")[:-1] or not records  # no reader finds another line end
    assert jsonio.parse_lines(text, "demo") == records
    assert jsonio.parse(jsonio.dumps(records), "demo") == records


def test_json_lines_split_on_newline_only() -> None:
    raw = '{"q": "a\u2028b\u2029c\x85d"}\r\n{"q": 2}\n\n'  # separators left raw by another writer
    assert jsonio.parse_lines(raw, "demo") == [{"q": "a\u2028b\u2029c\x85d"}, {"q": 2}]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[" * 100_000 + "]" * 100_000, "line 1: not readable JSON: nested too deeply"),
        ("[" + "1" * 5_001 + "]", "line 1: not readable JSON: Exceeds the limit (4300 digits)"),
        ('{"a": 1,\n "b": }', "line 2: not valid JSON: Expecting value"),
        ('{"a": 1} x', "line 1: text after the end of the JSON value"),
    ],
    ids=["nesting", "integer", "syntax", "trailing"],
)
def test_every_parse_failure_is_one_dataset_error_line(text: str, reason: str) -> None:
    with pytest.raises(DatasetError) as caught:
        jsonio.parse(text, "demo.json")
    assert str(caught.value).startswith(f"demo.json: {reason}")
    assert "\n" not in str(caught.value)
    with pytest.raises(DatasetError, match=r"^demo\.jsonl: line \d: "):
        jsonio.parse_lines(text, "demo.jsonl")


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"sql": "SELECT 1"}\n{"sql": "SELECT \'\xed\xa0\x80\'"}\n')  # a surrogate as UTF-8 bytes
    with pytest.raises(DatasetError, match=r"p\.jsonl: line 2: not UTF-8 text \(byte 0xed\)"):
        jsonio.read_json_lines(path)
    with pytest.raises(DatasetError, match="questions file not found"):
        jsonio.read_json(tmp_path / "absent.json", "questions file")


def test_objects_only_where_records_are_read() -> None:
    with pytest.raises(DatasetError, match="demo: line 2: not a JSON object"):
        jsonio.parse_lines('{"a": 1}\n[1]\n', "demo", objects=True)


def test_a_lone_surrogate_is_refused_by_name_before_any_engine() -> None:
    assert jsonio.surrogate_refusal("SELECT 'caf\u00e9 \U0001f600'") is None
    assert jsonio.surrogate_refusal("SELECT '\ud800'") == "not UTF-8 text: a lone surrogate (U+D800) at character 9"


def test_a_write_cut_short_leaves_the_old_file_and_no_summary(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    folder.write(RunSummary("demo", {}, versions={}), [{"i": 0}], "# old")

    def records() -> object:
        yield {"i": 1}
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        folder.write(RunSummary("demo", {}, versions={}), records(), "# new")  # type: ignore[arg-type]
    assert not folder.summary_path.exists()  # the old summary went first: no run looks complete
    assert folder.read_records() == [{"i": 0}]  # the old records whole, never half of the new ones
    assert sorted(p.name for p in folder.path.iterdir()) == ["report.md", "samples.jsonl"]  # no temporary file


def test_the_summary_is_written_last(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "run")
    summary, records, report = folder.write(RunSummary("demo", {}, versions={}), [{"q": "\ud800"}], "\ud800")
    assert summary.stat().st_mtime_ns >= max(records.stat().st_mtime_ns, report.stat().st_mtime_ns)
    assert folder.read_records() == [{"q": "\ud800"}]
    assert report.read_text(encoding="utf-8") == "\\ud800\n"  # a report is text for people: the escape shown
    assert write_jsonl(tmp_path / "x.jsonl", [{"q": "\u2028"}]).read_text(encoding="utf-8") == '{"q": "\\u2028"}\n'
    assert json.loads(summary.read_text(encoding="utf-8"))["command"] == "demo"
