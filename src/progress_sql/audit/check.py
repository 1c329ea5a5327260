"""What an audit check is: its id, name, family and function (:class:`Check`), the finding it reports,
and the decorator the family modules (``single``, ``static``, ``perturbation``) define their checks
with; :mod:`progress_sql.audit.catalogue` lists them. Design: docs/audit.md#design."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

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


def check(check_id: str, name: str, family: Family) -> Callable[[CheckFunction], Check]:
    """The decorated function as check ``check_id`` (its family module lists it in ``CHECKS``)."""

    def define(function: CheckFunction) -> Check:
        return Check(check_id, name, family, function)

    return define


def shorten(text: str, limit: int = MAX_EVIDENCE_CHARS) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis.

    >>> shorten("abcdef", 4)
    'abc…'
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["MAX_EVIDENCE_CHARS", "AuditFinding", "Check", "CheckFunction", "Family", "check", "shorten"]
