"""The check catalogue: every audit check registered once, under its stable id, when its family module
is imported (:data:`CHECKS` imports all three); what a check is: docs/audit.md#design.

>>> CHECKS["G07"].name, CHECKS["G07"].family
('tie-at-limit', 'perturbation')
>>> [c.id for c in resolve_checks(["G03", "null-only"])]
['G03', 'G04']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from progress_sql.errors import ConfigError

if TYPE_CHECKING:
    from progress_sql.audit.context import AuditContext

Family = Literal["static", "execution", "perturbation"]
CheckFunction = Callable[["AuditContext"], "str | None"]
#: Evidence strings are cut here: records stay readable and small.
MAX_EVIDENCE_CHARS = 400


@dataclass(frozen=True, slots=True)
class Check:
    """One registered check."""

    id: str
    name: str
    family: Family
    function: CheckFunction

    @property
    def summary(self) -> str:
        """The first paragraph of the check's docstring."""
        doc = (self.function.__doc__ or "").strip()
        return " ".join(doc.split("\n\n")[0].split())

    @property
    def examples(self) -> tuple[str, str]:
        """The docstring's firing example and its quiet variant ("Fires: ... Does not fire: ...")."""
        doc = " ".join((self.function.__doc__ or "").split())
        fires, _, quiet = doc.partition("Fires:")[2].partition("Does not fire:")
        return fires.strip(), quiet.strip()

    @property
    def needs_database(self) -> bool:
        return self.family != "static"


@dataclass(frozen=True, slots=True)
class AuditFinding:
    """A check that fired on one example, with its evidence."""

    check: str
    evidence: str


_REGISTRY: dict[str, Check] = {}


def check(check_id: str, name: str, family: Family) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated function as check ``check_id``."""

    def register(function: CheckFunction) -> CheckFunction:
        if check_id in _REGISTRY:
            raise ValueError(f"check {check_id} registered twice")
        _REGISTRY[check_id] = Check(check_id, name, family, function)
        return function

    return register


def shorten(text: str, limit: int = MAX_EVIDENCE_CHARS) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis.

    >>> shorten("abcdef", 4)
    'abc…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _load() -> dict[str, Check]:
    # Importing a family module registers its checks.
    from progress_sql.audit import perturbation, single, static  # noqa: F401

    return dict(sorted(_REGISTRY.items()))


CHECKS: dict[str, Check] = _load()


def resolve_checks(names: Iterable[str] | None = None) -> tuple[Check, ...]:
    """The checks named by id or short name (all of them for None), in catalogue order."""
    if names is None:
        return tuple(CHECKS.values())
    by_name = {c.name: c for c in CHECKS.values()} | CHECKS
    wanted: set[str] = set()
    for name in names:
        found = by_name.get(name.strip()) or by_name.get(name.strip().upper())
        if found is None:
            known = ", ".join(f"{c.id} ({c.name})" for c in CHECKS.values())
            raise ConfigError(f"unknown audit check {name!r}; choose among {known}")
        wanted.add(found.id)
    return tuple(c for c in CHECKS.values() if c.id in wanted)
