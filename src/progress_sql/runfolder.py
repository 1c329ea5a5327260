"""The run folder every command with ``--out DIR`` leaves: ``summary.json`` (typed: settings, versions,
results), ``samples.jsonl`` and ``report.md`` (docs/cli.md#run-folders). It imports only ``types``,
``errors`` and ``jsonio`` from the package, so any layer may write a run folder.

Every file is written atomically (a temporary file renamed into place) and ``summary.json`` last, after
removing the one a previous run left: a present summary means a complete run. A command that a signal
ended leaves ``interrupted.json`` (:class:`Interruption`), which the readers report instead of the run,
until a later run into the folder completes."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from progress_sql import jsonio
from progress_sql.errors import ConfigError, DatasetError
from progress_sql.types import plain_level

SUMMARY_FILE = "summary.json"
RECORDS_FILE = "samples.jsonl"
REPORT_FILE = "report.md"
#: What a command that a signal ended leaves in its run folder (:class:`Interruption`).
INTERRUPTED_FILE = "interrupted.json"
#: A training run's episode log (``rl/``, one line per scored episode).
ROLLOUTS_FILE = "rollouts.jsonl"
#: The three files of every run folder (written records, report, then the summary).
RUN_FILES: tuple[str, str, str] = (SUMMARY_FILE, RECORDS_FILE, REPORT_FILE)
#: The run kinds ``progress-sql inspect`` and the page read (the ``command`` of their ``summary.json``);
#: here, not beside the checks that use them, so that reading a run folder imports no parser.
RunKind = Literal["rollout", "eval", "eval-turns", "train"]
RUN_KINDS: tuple[RunKind, ...] = get_args(RunKind)


def package_versions() -> dict[str, str]:
    """Versions that decide results, recorded in every ``summary.json``."""
    import platform
    import sqlite3
    from importlib.metadata import version

    from progress_sql import __version__

    return {
        "progress_sql": __version__,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "sqlglot": version("sqlglot"),  # the installed release, without importing the parser
    }


class Summary(Protocol):
    """What :meth:`RunFolder.write_summary` accepts: a typed record that knows its JSON shape."""

    @property
    def command(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class RunSummary:
    """``summary.json`` of a command without a summary type of its own.

    ``results`` are the command's own top-level fields, written after ``command``, ``settings`` and
    ``versions`` (flat, so that files written before this record existed keep their keys).

    >>> RunSummary("demo", {"turns": 2}, {"bound": 1.5}, versions={"python": "3"}).to_dict()
    {'command': 'demo', 'settings': {'turns': 2}, 'versions': {'python': '3'}, 'bound': 1.5}
    """

    command: str
    settings: Mapping[str, Any]
    results: Mapping[str, Any] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=package_versions)

    def to_dict(self) -> dict[str, Any]:
        reserved = {"command", "settings", "versions"} & set(self.results)
        if reserved:
            raise ValueError(f"results may not redefine {sorted(reserved)}")
        return {
            "command": self.command,
            "settings": dict(self.settings),
            "versions": dict(self.versions),
            **self.results,
        }


@dataclass(frozen=True, slots=True)
class Interruption:
    """``interrupted.json``: a run of ``command`` into the folder was ended by ``signal`` (its name,
    ``SIGINT``) at ``at`` (UTC, ISO 8601) before it finished; the folder's other files are an earlier
    run's or incomplete.

    >>> Interruption.from_dict(Interruption("eval", "SIGTERM", "2026-01-01T00:00:00Z").to_dict()).signal
    'SIGTERM'
    """

    command: str
    signal: str
    at: str

    def to_dict(self) -> dict[str, str]:
        return {"command": self.command, "signal": self.signal, "at": self.at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Interruption:
        return cls(str(data.get("command", "?")), str(data.get("signal", "?")), str(data.get("at", "?")))

    def describe(self, path: Path) -> str:
        """What a reader says instead of reading the folder at ``path``."""
        return (
            f"{path}: the {self.command} run into this folder was interrupted ({self.signal} at {self.at}) before "
            f"it finished, so it holds no complete run; run the command again with the same --out"
        )


def write_json(path: Path, data: Any) -> Path:
    """Write pretty JSON (UTF-8, trailing newline; any string, :func:`progress_sql.jsonio.dumps`)
    atomically; returns ``path``."""
    return jsonio.write_atomic(path, (jsonio.dumps(data),))


def prepared_folder(path: Path) -> RunFolder:
    """The run folder at ``path``, created before the work starts so that a bad path fails at once
    (ConfigError)."""
    try:
        return RunFolder(path).create()
    except OSError as error:
        raise ConfigError(f"cannot create {path}: {error}") from error


@contextmanager
def writing_results(path: Path) -> Iterator[None]:
    """Around the writes of a finished run: an OSError becomes a ConfigError that names ``path`` (the
    command's ``error: ...`` and exit code 2)."""
    try:
        yield
    except OSError as error:
        raise ConfigError(f"cannot write results to {path}: {error}") from error


def write_jsonl(path: Path, records: Iterable[Any]) -> Path:
    """One JSON line per record (UTF-8; as :func:`progress_sql.types.plain` gives it, any string:
    :func:`progress_sql.jsonio.dumps_line`) atomically; returns ``path``."""
    return jsonio.write_atomic(path, (jsonio.dumps_line(record, plain_level) + "\n" for record in records))


@dataclass(frozen=True, slots=True)
class RunFolder:
    """The folder of one run; each ``write_*`` creates it if needed and returns the file written.

    I/O errors propagate as :class:`OSError` (the CLI turns them into a message and exit code 2).
    """

    path: Path

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY_FILE

    @property
    def records_path(self) -> Path:
        return self.path / RECORDS_FILE

    @property
    def report_path(self) -> Path:
        return self.path / REPORT_FILE

    @property
    def interrupted_path(self) -> Path:
        return self.path / INTERRUPTED_FILE

    def create(self) -> RunFolder:
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    def write_summary(self, summary: Summary) -> Path:
        """``summary.json``: the run is complete, so an earlier run's interruption marker goes."""
        self.create()
        path = write_json(self.summary_path, summary.to_dict())
        self.interrupted_path.unlink(missing_ok=True)
        return path

    def mark_interrupted(self, command: str, signal_name: str) -> Path:
        """Write ``interrupted.json`` into the (existing) folder; returns its path."""
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return write_json(self.interrupted_path, Interruption(command, signal_name, at).to_dict())

    def interruption(self) -> Interruption | None:
        """The folder's interruption marker (None: there is none, or it cannot be read as one)."""
        if not self.interrupted_path.is_file():
            return None
        try:
            data = jsonio.read_json(self.interrupted_path, "interruption marker")
        except (DatasetError, OSError):
            return Interruption("?", "?", "?")  # a marker was being written: the run was interrupted all the same
        return Interruption.from_dict(data if isinstance(data, dict) else {})

    def check_complete(self) -> None:
        """DatasetError when a run into the folder was interrupted (:class:`Interruption`)."""
        interruption = self.interruption()
        if interruption is not None:
            raise DatasetError(interruption.describe(self.path))

    def write_records(self, records: Iterable[Any]) -> Path:
        self.create()
        return write_jsonl(self.records_path, records)

    def write_report(self, markdown: str) -> Path:
        self.create()
        text = jsonio.escape_surrogates(markdown if markdown.endswith("\n") else markdown + "\n")
        return jsonio.write_atomic(self.report_path, (text,))

    def write(self, summary: Summary, records: Iterable[Any], report: str) -> tuple[Path, Path, Path]:
        """All three files, the summary last (an old one removed first); returns their paths in
        :data:`RUN_FILES` order."""
        self.create()
        self.summary_path.unlink(missing_ok=True)
        records_path, report_path = self.write_records(records), self.write_report(report)
        return self.write_summary(summary), records_path, report_path

    def read_summary(self) -> dict[str, Any]:
        """``summary.json`` (DatasetError: unreadable or not JSON; FileNotFoundError: absent)."""
        if not self.summary_path.exists():
            raise FileNotFoundError(2, "No such file or directory", str(self.summary_path))
        data = jsonio.read_json(self.summary_path, "summary")
        if not isinstance(data, dict):
            raise DatasetError(f"{self.summary_path}: not a JSON object")
        return data

    def read_records(self) -> list[dict[str, Any]]:
        """``samples.jsonl`` (DatasetError: unreadable or not JSON Lines; FileNotFoundError: absent)."""
        if not self.records_path.exists():
            raise FileNotFoundError(2, "No such file or directory", str(self.records_path))
        return jsonio.read_json_lines(self.records_path, "records", objects=True)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple, dict)):
        return f"`{json.dumps(value, ensure_ascii=False)}`"
    return "n/a" if value is None else str(value).replace("|", "\\|")


def flatten(results: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested mappings as ``(dotted.key, value)`` pairs, in order.

    >>> flatten({"a": 1, "b": {"c": 2.5, "d": [1, 2]}})
    [('a', 1), ('b.c', 2.5), ('b.d', [1, 2])]
    """
    pairs: list[tuple[str, Any]] = []
    for key, value in results.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            pairs += flatten(value, f"{name}.")
        else:
            pairs.append((name, value))
    return pairs


def basic_report(
    title: str, summary: Mapping[str, Any], *, results: Mapping[str, Any], notes: Iterable[str] = ()
) -> str:
    """A plain ``report.md`` for a command without a report of its own: the title, the settings and
    versions of ``summary`` (a ``summary.json`` dict), a table of ``results`` and the ``notes``."""
    lines = [f"# {title}", "", "## Settings", "", *settings_table(summary.get("settings", {}))]
    versions = summary.get("versions", {})
    if versions:
        lines.append(f"- versions: {', '.join(f'{k} {v}' for k, v in versions.items())}")
    lines += ["", "## Results", "", "| result | value |", "|---|---:|"]
    lines += [f"| {key} | {_cell(value)} |" for key, value in flatten(results)]
    written = list(notes)
    if written:
        lines += ["", "## Notes", "", *(f"- {note}" for note in written)]
    return "\n".join(lines) + "\n"


def settings_table(settings: Mapping[str, Any]) -> list[str]:
    """Markdown bullet lines of a settings mapping (for a report's header).

    >>> settings_table({"task": "spider-dev", "workers": None})
    ['- task: `spider-dev`', '- workers: `None`']
    """
    return [f"- {key}: `{value}`" for key, value in settings.items()]
