"""Bad data before work (issue 36 item 7; docs/data.md#data-checks): a data set none of whose databases
can be used is one ``error:`` line naming the path and exit 2 before anything is written; one bad
database among good ones skips its examples with a reason the summary counts and prints; a run that
scored nothing exits 2 without a summary."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.runfolder import RunFolder
from tests.cli.test_hostile_input import one_line_error

runner = CliRunner()

#: How each kind of bad database is made at ``path`` (the place of ``<db_id>/<db_id>.sqlite``).
BAD_DATABASES: dict[str, Callable[[Path], None]] = {
    "zero-byte file": lambda path: path.write_bytes(b""),
    "a folder": lambda path: path.mkdir(),
    "random bytes": lambda path: path.write_bytes(bytes(range(256)) * 4),
    "a text file": lambda path: path.write_text("CREATE TABLE singer (name TEXT);\n", encoding="utf-8"),
    "unreadable (a symlink loop)": lambda path: path.symlink_to(path.name),
}
#: What the refusal or the skip reason says of each, before the path.
SAYS = {
    "zero-byte file": "database file empty",
    "a folder": "database path is not a file",
    "random bytes": "not a SQLite database",
    "a text file": "not a SQLite database",
    "unreadable (a symlink loop)": "database file unreadable",
}


def _questions(music_dir: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((music_dir / "questions.json").read_text(encoding="utf-8"))
    return rows


def _data_dir(root: Path, rows: list[dict[str, Any]]) -> Path:
    """A Spider-layout data folder at ``root`` holding ``rows`` as dev.json (no databases yet)."""
    (root / "database").mkdir(parents=True)
    (root / "dev.json").write_text(json.dumps(rows), encoding="utf-8")
    return root


def _predictions(folder: Path, rows: list[dict[str, Any]]) -> Path:
    path = folder / "pred.txt"
    path.write_text("".join(row["query"] + "\n" for row in rows), encoding="utf-8")
    return path


def _eval(data: Path, predictions: Path, out: Path, *more: str) -> Result:
    return runner.invoke(app, ["eval", "--task", "spider-dev", "--data-dir", str(data), "--predictions",
                               str(predictions), "--out", str(out), "--workers", "1", "--no-plots", *more])  # fmt: skip


# ---- the whole data set broken: refused before any work -----------------------------------------


def _broken_by_database(kind: str) -> Callable[[Path, Path], tuple[Path, str]]:
    def make(data: Path, music_dir: Path) -> tuple[Path, str]:
        path = data / "database" / "music" / "music.sqlite"
        path.parent.mkdir()
        BAD_DATABASES[kind](path)
        return data, f"{SAYS[kind]}: {path}"

    return make


def _without_database_folder(data: Path, music_dir: Path) -> tuple[Path, str]:
    (data / "database").rmdir()
    return data, f"databases folder not found: {data / 'database'}"


def _climbing(db_id: Callable[[Path], str]) -> Callable[[Path, Path], tuple[Path, str]]:
    """Every example on a ``db_id`` outside the data folder, with a real copy of the database where the
    unconfined path leads (``<root>/<db_id>/../<db_id>.sqlite``), so that reading it would score."""

    def make(data: Path, music_dir: Path) -> tuple[Path, str]:
        name = db_id(data)
        if "\x00" not in name:
            unconfined = (data / "database" / name / f"{name}.sqlite").resolve(strict=False)
            unconfined.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(music_dir / "database" / "music" / "music.sqlite", unconfined)
        rows = [{**row, "db_id": name} for row in json.loads((data / "dev.json").read_text(encoding="utf-8"))]
        (data / "dev.json").write_text(json.dumps(rows), encoding="utf-8")
        return data, f"db_id leaves the databases folder: {name!r}"

    return make


BROKEN: dict[str, Callable[[Path, Path], tuple[Path, str]]] = {
    "no database folder": _without_database_folder,
    **{f"every database {kind}": _broken_by_database(kind) for kind in BAD_DATABASES},
    "db_id '../music'": _climbing(lambda data: "../music"),
    "db_id '../../music'": _climbing(lambda data: "../../music"),
    "absolute db_id": _climbing(lambda data: str(data.parent / "elsewhere" / "music")),
    "db_id with a separator": _climbing(lambda data: "music/music"),
    "db_id with a NUL": _climbing(lambda data: "music\x00"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_data_set_is_one_line_naming_the_path_and_exit_2(case: str, music_dir: Path, tmp_path: Path) -> None:
    rows = _questions(music_dir)
    # two levels down: a db_id's '../..' stays inside tmp_path
    data, says = BROKEN[case](_data_dir(tmp_path / "deep" / "data", rows), music_dir)
    out = tmp_path / "run"
    line = one_line_error(_eval(data, _predictions(tmp_path, rows), out))
    assert says in line, line
    assert not out.exists()  # refused while resolving the task: no folder, no summary


OTHER_COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "rollout": lambda data, out: ["rollout", "--task", "spider-dev", "--data-dir", str(data), "--backend", "replay",
                                  "--replay", str(out.parent / "replay.jsonl"), "--out", str(out), "--workers", "1"],
    "build-suite": lambda data, out: ["build-suite", "--task", "spider-dev", "--data-dir", str(data), "--out",
                                      str(out), "--workers", "1"],
}  # fmt: skip


@pytest.mark.parametrize("command", list(OTHER_COMMANDS))
def test_other_commands_refuse_a_broken_data_set_too(command: str, music_dir: Path, tmp_path: Path) -> None:
    """The check is the task resolution's: every command that runs SQL on the databases refuses alike."""
    rows = _questions(music_dir)
    data, says = _broken_by_database("zero-byte file")(_data_dir(tmp_path / "data", rows), music_dir)
    (tmp_path / "replay.jsonl").write_text("".join(json.dumps({"response": r["query"]}) + "\n" for r in rows))
    out = tmp_path / "run"
    assert says in one_line_error(runner.invoke(app, OTHER_COMMANDS[command](data, out)))
    assert not (out / "summary.json").exists()


# ---- one bad database among good ones: its examples skipped and counted --------------------------


@pytest.fixture(scope="module")
def mixed_run(music_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result, dict[str, str]]:
    """The music task plus one example on each kind of bad database, on an absent one and on a db_id
    that climbs to a real copy of music.sqlite; db_id -> the expected skip reason."""
    root = tmp_path_factory.mktemp("mixed")
    music = _questions(music_dir)
    reasons: dict[str, str] = {}
    extra = []
    data = _data_dir(root / "data", [])
    shutil.copytree(music_dir / "database" / "music", data / "database" / "music")
    for position, kind in enumerate(BAD_DATABASES):
        db_id = f"bad{position}"
        path = data / "database" / db_id / f"{db_id}.sqlite"
        path.parent.mkdir()
        BAD_DATABASES[kind](path)
        reasons[db_id] = f"{SAYS[kind]}: {path}"
        extra.append({**music[0], "db_id": db_id})
    shutil.copy(music_dir / "database" / "music" / "music.sqlite", data / "music.sqlite")  # where ../music leads
    reasons["../music"] = "db_id leaves the databases folder: '../music'"
    reasons["gone"] = f"database file absent: {data / 'database' / 'gone' / 'gone.sqlite'}"
    extra += [{**music[0], "db_id": "../music"}, {**music[0], "db_id": "gone"}]
    rows = music + extra
    (data / "dev.json").write_text(json.dumps(rows), encoding="utf-8")
    out = root / "run"
    return out, _eval(data, _predictions(root, rows), out), reasons


def test_one_bad_database_among_good_ones_is_a_counted_skip(mixed_run: tuple[Path, Result, dict[str, str]]) -> None:
    out, result, reasons = mixed_run
    assert result.exit_code == 0, (result.output, result.exception)
    records = RunFolder(out).read_records()
    scored = [r for r in records if r["status"] == "scored"]
    assert [r["match"] for r in scored] == [True] * 6  # the good database's examples as ever
    skipped = {r["db_id"]: r["reason"] for r in records if r["status"] == "skipped"}
    assert skipped.keys() == reasons.keys()
    for db_id, reason in reasons.items():  # a folder and a symlink loop say what they are after the path
        assert skipped[db_id].startswith(reason), (skipped[db_id], reason)
    metrics = RunFolder(out).read_summary()["metrics"]
    assert (metrics["scored"], metrics["skipped"], metrics["execution_accuracy"]) == (6, len(reasons), 1.0)
    assert metrics["skipped_examples"]["by_reason"] == {
        "database file empty": {"bad0": 1},
        "database path is not a file": {"bad1": 1},
        "not a SQLite database": {"bad2": 1, "bad3": 1},
        "database file unreadable": {"bad4": 1},
        "db_id leaves the databases folder": {"../music": 1},
        "database file absent": {"gone": 1},
    }


def test_the_skips_are_printed_and_reported_by_reason(mixed_run: tuple[Path, Result, dict[str, str]]) -> None:
    out, result, _ = mixed_run
    for line in (
        "skipped (database file empty): 1",
        "skipped (not a SQLite database): 2",
        "skipped (db_id leaves the databases folder): 1",
        "skipped (database file unreadable): 1",
    ):
        assert line in result.stdout  # fmt: skip
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "- 2 examples skipped, not a SQLite database: `bad2` (1), `bad3` (1)." in report
    assert "- 1 examples skipped, db_id leaves the databases folder: `../music` (1)." in report
    notes = RunFolder(out).read_summary()["notes"]
    assert any(note.startswith("1 examples skipped, database path is not a file (bad1 (1))") for note in notes)


# ---- nothing scored: exit 2 and no summary ------------------------------------------------------


def test_a_run_that_scored_nothing_exits_2_without_a_summary(music_dir: Path, tmp_path: Path) -> None:
    """Every gold fails on a database that is good: nothing to measure."""
    rows = [{**row, "query": "SELECT * FROM no_such_table"} for row in _questions(music_dir)]
    data = _data_dir(tmp_path / "data", rows)
    shutil.copytree(music_dir / "database" / "music", data / "database" / "music")
    out = tmp_path / "run"
    line = one_line_error(_eval(data, _predictions(tmp_path, rows), out))
    assert line == f"error: nothing could be scored: {len(rows)} examples, {len(rows)} with a gold query that " \
                   "failed; no summary written"  # fmt: skip
    assert not RunFolder(out).summary_path.exists()
    assert not (out / "samples.jsonl").exists()


@pytest.mark.parametrize("turns", [None, "2"])
def test_a_rollout_or_interactive_eval_that_scored_nothing_exits_2(
    turns: str | None, music_dir: Path, tmp_path: Path
) -> None:
    """``rollout`` and ``eval --turns`` refuse alike: every gold fails, no episode to measure."""
    rows = [{**row, "query": "SELECT * FROM no_such_table"} for row in _questions(music_dir)]
    data = _data_dir(tmp_path / "data", rows)
    shutil.copytree(music_dir / "database" / "music", data / "database" / "music")
    out = tmp_path / "run"
    (tmp_path / "replay.jsonl").write_text("")
    argv = OTHER_COMMANDS["rollout"](data, out)
    if turns is not None:
        argv = ["eval", "--turns", turns, *argv[1:]]
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    *progress, line = result.stderr.strip().split("\n")  # the turns' progress lines, then the error
    assert all("turns" in text for text in progress)
    assert line == f"error: nothing could be scored: {len(rows)} examples, {len(rows)} with a gold query that " \
                   "failed; no summary written"  # fmt: skip
    assert not RunFolder(out).summary_path.exists()


def test_a_limit_that_keeps_only_bad_examples_exits_2(music_dir: Path, tmp_path: Path) -> None:
    """The data set has usable databases, but the first two examples' are bad: refused after judging."""
    rows = _questions(music_dir)
    data = _data_dir(tmp_path / "data", [{**rows[0], "db_id": "empty"}, {**rows[0], "db_id": "gone"}, *rows])
    shutil.copytree(music_dir / "database" / "music", data / "database" / "music")
    (data / "database" / "empty").mkdir()
    (data / "database" / "empty" / "empty.sqlite").write_bytes(b"")
    out = tmp_path / "run"
    rows_read = json.loads((data / "dev.json").read_text(encoding="utf-8"))
    line = one_line_error(_eval(data, _predictions(tmp_path, rows_read), out, "--limit", "2"))
    assert line == ("error: nothing could be scored: 2 examples, 2 skipped (database file empty 1, database file "
                    "absent 1); no summary written")  # fmt: skip
    assert not RunFolder(out).summary_path.exists()


def test_a_database_file_replaced_later_is_checked_again(music_dir: Path, tmp_path: Path) -> None:
    """The header is read once per version of a file: a run after the file is fixed uses it."""
    rows = _questions(music_dir)
    data, _ = _broken_by_database("a text file")(_data_dir(tmp_path / "data", rows), music_dir)
    assert _eval(data, _predictions(tmp_path, rows), tmp_path / "first").exit_code == 2
    target = data / "database" / "music" / "music.sqlite"
    shutil.copy(music_dir / "database" / "music" / "music.sqlite", target)
    os.utime(target, ns=(1, 1))  # another version even on a filesystem with coarse times
    result = _eval(data, _predictions(tmp_path, rows), tmp_path / "second")
    assert result.exit_code == 0, (result.output, result.exception)
    assert RunFolder(tmp_path / "second").read_summary()["metrics"]["matched"] == len(rows)
