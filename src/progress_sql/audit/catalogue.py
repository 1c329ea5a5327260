"""The check catalogue: every audit check once, under its stable id, from the three family modules'
``CHECKS`` tuples; what a check is: :mod:`progress_sql.audit.check`, docs/audit.md#design.

>>> CHECKS["G07"].name, CHECKS["G07"].family
('tie-at-limit', 'perturbation')
>>> [c.id for c in resolve_checks(["G03", "null-only"])]
['G03', 'G04']
"""

from __future__ import annotations

from collections.abc import Iterable

from progress_sql.audit import perturbation, single, static
from progress_sql.audit.check import Check
from progress_sql.errors import ConfigError


def catalogue(checks: Iterable[Check]) -> dict[str, Check]:
    """``checks`` by id, in id order; an id given twice is an error."""
    by_id: dict[str, Check] = {}
    for item in checks:
        if item.id in by_id:
            raise ValueError(f"check {item.id} defined twice")
        by_id[item.id] = item
    return dict(sorted(by_id.items()))


#: Every check, by id: the three families' own lists.
CHECKS: dict[str, Check] = catalogue((*static.CHECKS, *single.CHECKS, *perturbation.CHECKS))


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
