"""The task-file fields of write tasks and ambiguous questions (docs/tasks.md): a questions file in
Spider's format whose entries may carry ``write`` and ``ambiguity`` objects; read into the
:class:`~progress_sql.types.WriteSpec` and :class:`~progress_sql.types.AmbiguitySlot` records, and
written back as plain data (the export codec carries them as one JSON string).

>>> spec = write_spec_from({"tables": ["singer"], "statements": ["update"],
...                         "checks": [{"name": "n", "sql": "SELECT count(*) FROM singer", "expected": [[6]]}]})
>>> spec.checks[0].expected
((6,),)
>>> task_from_json(task_json(spec, ())) == (spec, ())
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args

from progress_sql.errors import DatasetError
from progress_sql.jsonio import dumps, parse
from progress_sql.types import AmbiguitySlot, Row, WriteCheck, WriteSpec, WriteStatement

_STATEMENTS: tuple[str, ...] = get_args(WriteStatement)


def _strings(value: Any, name: str, where: str, *, empty: bool = False) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise DatasetError(f"{where}: {name} must be a list of strings, got {value!r}")
    if not value and not empty:
        raise DatasetError(f"{where}: {name} must not be empty")
    return tuple(value)


def _rows(value: Any, where: str) -> tuple[Row, ...] | None:
    if value is None:
        return None
    if not isinstance(value, Sequence) or not all(
        isinstance(row, Sequence) and not isinstance(row, str) for row in value
    ):
        raise DatasetError(f"{where}: expected must be a list of rows (lists of values), got {value!r}")
    return tuple(tuple(row) for row in value)


def write_spec_from(data: Any, where: str = "write") -> WriteSpec:
    """The :class:`WriteSpec` of a task file's ``write`` object; a clear DatasetError when malformed."""
    if not isinstance(data, Mapping):
        raise DatasetError(f"{where}: expected an object with tables and checks, got {data!r}")
    tables = _strings(data.get("tables"), "tables", where)
    statements = _strings(data.get("statements", ["insert", "update", "delete"]), "statements", where)
    unknown = [s for s in statements if s not in _STATEMENTS]
    if unknown:
        raise DatasetError(f"{where}: unknown statement kinds {', '.join(unknown)} (allowed: {', '.join(_STATEMENTS)})")
    raw_checks = data.get("checks", [])
    if not isinstance(raw_checks, Sequence) or isinstance(raw_checks, str):
        raise DatasetError(f"{where}: checks must be a list of objects")
    checks = []
    for position, check in enumerate(raw_checks):
        if not isinstance(check, Mapping) or not isinstance(check.get("sql"), str):
            raise DatasetError(f"{where}: check {position} needs a string sql")
        name = str(check.get("name") or f"check {position + 1}")
        checks.append(WriteCheck(name, check["sql"], _rows(check.get("expected"), f"{where}: check {name}")))
    compare = _strings(data.get("compare_tables", []), "compare_tables", where, empty=True)
    if not checks and not compare:
        raise DatasetError(f"{where}: a write task needs checks or compare_tables")
    preset = data.get("preset", "strict")
    if not isinstance(preset, str):
        raise DatasetError(f"{where}: preset must be a preset name")
    return WriteSpec(tables, tuple(checks), statements, compare, preset)  # type: ignore[arg-type]  # checked above


def ambiguity_from(data: Any, where: str = "ambiguity") -> tuple[AmbiguitySlot, ...]:
    """The slots of a task file's ``ambiguity`` list."""
    if not isinstance(data, Sequence) or isinstance(data, str):
        raise DatasetError(f"{where}: expected a list of slots, got {data!r}")
    slots = []
    for position, slot in enumerate(data):
        here = f"{where}: slot {position}"
        if not isinstance(slot, Mapping):
            raise DatasetError(f"{here}: expected an object")
        for key in ("name", "missing", "interpretation"):
            if not isinstance(slot.get(key), str) or not slot[key].strip():
                raise DatasetError(f"{here}: {key} must be a non-empty string")
        keywords = _strings(slot.get("keywords"), "keywords", here)
        questions = _strings(slot.get("questions", []), "questions", here, empty=True)
        slots.append(AmbiguitySlot(slot["name"], slot["missing"], slot["interpretation"], keywords, questions))
    return tuple(slots)


def write_spec_data(spec: WriteSpec) -> dict[str, Any]:
    """The ``write`` object of a task file (the inverse of :func:`write_spec_from`)."""
    checks = [
        {"name": c.name, "sql": c.sql, **({} if c.expected is None else {"expected": [list(r) for r in c.expected]})}
        for c in spec.checks
    ]
    return {"tables": list(spec.tables), "statements": list(spec.statements), "checks": checks,
            "compare_tables": list(spec.compare_tables), "preset": spec.preset}  # fmt: skip


def ambiguity_data(slots: Sequence[AmbiguitySlot]) -> list[dict[str, Any]]:
    """The ``ambiguity`` list of a task file."""
    return [{"name": s.name, "missing": s.missing, "interpretation": s.interpretation, "keywords": list(s.keywords),
             "questions": list(s.questions)} for s in slots]  # fmt: skip


def task_json(write: WriteSpec | None, ambiguity: Sequence[AmbiguitySlot]) -> str:
    """One JSON string holding an example's task fields ("" for a plain read question)."""
    if write is None and not ambiguity:
        return ""
    data: dict[str, Any] = {}
    if write is not None:
        data["write"] = write_spec_data(write)
    if ambiguity:
        data["ambiguity"] = ambiguity_data(ambiguity)
    return dumps(data, indent=None, sort_keys=True).rstrip("\n")


def task_from_json(text: str, where: str = "task_spec") -> tuple[WriteSpec | None, tuple[AmbiguitySlot, ...]]:
    """The task fields :func:`task_json` wrote."""
    if not text:
        return None, ()
    data = parse(text, where)
    if not isinstance(data, Mapping):
        raise DatasetError(f"{where}: expected a JSON object")
    write = write_spec_from(data["write"], f"{where}.write") if "write" in data else None
    ambiguity = ambiguity_from(data["ambiguity"], f"{where}.ambiguity") if "ambiguity" in data else ()
    return write, ambiguity


__all__ = [
    "ambiguity_data",
    "ambiguity_from",
    "task_from_json",
    "task_json",
    "write_spec_data",
    "write_spec_from",
]
