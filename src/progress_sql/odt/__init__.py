"""The Oracle-guided Diagnostic Tree (ODT): SQL -> clause-level profile tree -> structural score,
diagnostic tags and feedback text (Progress-SQL, section 4.1 and Appendix D).

>>> from progress_sql.odt import diagnose
>>> d = diagnose("SELECT name FROM singer", "SELECT name FROM singer WHERE age > 30")
>>> d.tags, round(d.f_struct, 3)
(('WHERE_MISSING',), 0.836)
"""

from __future__ import annotations

from progress_sql.odt.build import OdtNode, build_odt
from progress_sql.odt.config import FeatureWeights, OdtConfig
from progress_sql.odt.diagnose import Diagnosis, GoldReference, diagnose, prepare_gold
from progress_sql.odt.feedback import feedback_text
from progress_sql.odt.tags import CATALOGUE, TAGS, TagSpec

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
