"""The generation journal of an ``eval`` run: every answer a backend returns, appended to the run folder
as its batch finishes, so that an interrupted run (a killed job, a lost machine, a spent budget) can go on
with ``eval --resume`` and generate only the questions it had not reached
(docs/evaluation.md#resuming-a-long-generation).

``generations.jsonl``: a header line naming what generated the answers (backend, model, decoding, prompt
style, schema profile, engine), then one line per question, ``{"index", "key", "texts"}``. ``key`` is a
SHA-256 of the question's conversation, so an answer is reused only for the very prompt it answered. A
line cut short by a kill is dropped on reading (its question is generated again)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from progress_sql.errors import ConfigError
from progress_sql.jsonio import dumps_line, read_text
from progress_sql.prompts import Message

JOURNAL_FILE = "generations.jsonl"
JOURNAL_VERSION = 1


def conversation_key(index: int, messages: Sequence[Message]) -> str:
    """The key of one question's answers: its example index and the exact messages sent."""
    text = json.dumps([index, [[m["role"], m["content"]] for m in messages]], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(slots=True)
class GenerationJournal:
    """The answers of one run's backend, read back on ``--resume`` and appended to as batches finish.

    ``identity`` is what decides the answers; a journal written with another identity is refused, so a
    resumed run never mixes two models' or two decodings' answers."""

    path: Path
    identity: Mapping[str, Any]
    answers: dict[str, list[str]] = field(default_factory=dict)
    _handle: IO[str] | None = None

    @classmethod
    def open(cls, folder: Path, identity: Mapping[str, Any], *, resume: bool) -> GenerationJournal:
        """The journal of ``folder``: with ``resume``, the answers an earlier run of the same identity kept
        (none when there is no journal yet); without, a new journal replacing any earlier one."""
        path = folder / JOURNAL_FILE
        identity = json.loads(json.dumps(dict(identity)))  # as it reads back: lists for tuples
        journal = cls(path, identity)
        if resume and path.is_file():
            journal.answers = _read(path, identity)
            _drop_cut_tail(path)  # the next line must not run on from a line a kill cut short
            journal._handle = path.open("a", encoding="utf-8")
        else:
            journal._handle = path.open("w", encoding="utf-8")
            journal._write([{"journal": JOURNAL_VERSION, "identity": identity}])
        return journal

    def get(self, key: str) -> list[str] | None:
        return self.answers.get(key)

    def record(self, answered: Sequence[tuple[int, str, Sequence[str]]]) -> None:
        """Keep a batch's answers, ``(index, key, texts)`` per question: on disk before this returns."""
        for _, key, texts in answered:
            self.answers[key] = list(texts)
        self._write([{"index": index, "key": key, "texts": list(texts)} for index, key, texts in answered])

    def _write(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Append ``entries``, a line each, and sync them to disk."""
        assert self._handle is not None, "journal used after close"
        self._handle.write("".join(dumps_line(entry) + "\n" for entry in entries))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> GenerationJournal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def journaled(folder: Path) -> int:
    """How many questions' answers the journal in ``folder`` holds (0: none, or no journal)."""
    path = folder / JOURNAL_FILE
    if not path.is_file():
        return 0
    with path.open("rb") as handle:
        return max(0, sum(line.endswith(b"\n") for line in handle) - 1)


def unfinished(folder: Path, summary: Path) -> int:
    """The answers journaled in ``folder`` by a run that did not finish (its journal is newer than the
    folder's ``summary``, or there is no summary); 0 when none."""
    kept = journaled(folder)
    if not kept or not summary.is_file():
        return kept
    return kept if (folder / JOURNAL_FILE).stat().st_mtime > summary.stat().st_mtime else 0


def _drop_cut_tail(path: Path) -> None:
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def _read(path: Path, identity: Mapping[str, Any]) -> dict[str, list[str]]:
    """The answers of the journal at ``path``; ConfigError when it is not one, or another identity's."""
    lines = read_text(path, "generation journal").split("\n")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("journal") != JOURNAL_VERSION:
        raise ConfigError(f"{path} is not a generation journal of this version: remove it or give another --out")
    if header.get("identity") != identity:
        written = header.get("identity") or {}
        differ = sorted(k for k in set(written) | set(identity) if written.get(k) != identity.get(k))
        details = "; ".join(f"{k}: {written.get(k)!r} there, {identity.get(k)!r} now" for k in differ)
        raise ConfigError(
            f"--resume: {path} holds answers generated with other settings ({details}); "
            "resume with the same settings, or give another --out"
        )
    answers: dict[str, list[str]] = {}
    for line in lines[1:]:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # the empty tail, or a line a kill cut short: its question is generated again
        if isinstance(entry, dict) and isinstance(entry.get("key"), str) and isinstance(entry.get("texts"), list):
            answers[entry["key"]] = [str(t) for t in entry["texts"]]
    return answers
