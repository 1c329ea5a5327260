"""The Oracle-guided Diagnostic Tree (ODT): SQL -> clause-level profile tree -> structural score,
diagnostic tags and feedback text (Progress-SQL, section 4.1 and Appendix D).

>>> from progress_sql.odt import diagnose
>>> d = diagnose("SELECT name FROM singer", "SELECT name FROM singer WHERE age > 30")
>>> d.tags, round(d.f_struct, 3)
(('WHERE_MISSING',), 0.836)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from progress_sql.odt.build import OdtNode, build_odt
    from progress_sql.odt.config import FeatureWeights, OdtConfig
    from progress_sql.odt.diagnosis import diagnose, prepare_gold
    from progress_sql.odt.feedback import feedback_text
    from progress_sql.odt.records import Diagnosis, GoldReference
    from progress_sql.odt.tags import CATALOGUE, TAGS, TagSpec

#: The module of each name this package exports. The package imports none of them up front: the parser
#: (sqlglot) comes with the first name that needs it, so that a process that only carries references
#: and diagnoses (odt/records.py) never loads it.
_HOMES = {
    "CATALOGUE": "tags",
    "TAGS": "tags",
    "TagSpec": "tags",
    "Diagnosis": "records",
    "GoldReference": "records",
    "FeatureWeights": "config",
    "OdtConfig": "config",
    "OdtNode": "build",
    "build_odt": "build",
    "diagnose": "diagnosis",
    "prepare_gold": "diagnosis",
    "feedback_text": "feedback",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # found once
    return value


__all__ = [
    "CATALOGUE",
    "TAGS",
    "Diagnosis",
    "FeatureWeights",
    "GoldReference",
    "OdtConfig",
    "OdtNode",
    "TagSpec",
    "build_odt",
    "diagnose",
    "feedback_text",
    "prepare_gold",
]
