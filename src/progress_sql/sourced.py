"""A setting's value with whose it is: the paper's (with where it says so) or ours (with why). The trainer
setting (``integrations/trainer_setting.py``) and the named profiles (``profiles.py``) are made of these,
and their documentation tables print the source and the reason beside each value.

>>> paper(4, "T = 4 (Section 5.1)").source, ours(0.001, "not given").why
('paper', 'not given')
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Generic, Literal, TypeVar

T = TypeVar("T")
Source = Literal["paper", "ours"]


@dataclass(frozen=True, slots=True)
class Sourced(Generic[T]):
    """A value of a setting, whose it is (``paper`` or ``ours``) and why."""

    value: T
    source: Source
    why: str


def paper(value: T, why: str) -> Sourced[T]:
    return Sourced(value, "paper", why)


def ours(value: T, why: str) -> Sourced[T]:
    return Sourced(value, "ours", why)


def sourced_fields(record: Any) -> dict[str, Sourced[Any]]:
    """The :class:`Sourced` fields of a dataclass ``record`` by name, in declaration order (its plain fields,
    a name or a summary, left out)."""
    return {f.name: value for f in fields(record) if isinstance(value := getattr(record, f.name), Sourced)}
