"""Verbalize a diagnosis as the next user turn (paper, Appendix F, round 2+).

The text names tags and neutral descriptions only; it never quotes the gold SQL.

>>> print(feedback_text(("SELECT_ERROR", "GROUP_BY_ERROR"), "ok"))  # doctest: +ELLIPSIS
Feedback: your previous SQL has structural issues: SELECT_ERROR, GROUP_BY_ERROR. SELECT projection differs \
from reference. GROUP BY columns are not aligned with reference. Revise your previous answer using these issues. ...
"""

from __future__ import annotations

from collections.abc import Sequence

from progress_sql.odt.config import OdtConfig
from progress_sql.odt.tags import TAGS
from progress_sql.prompts import feedback_prompt

_DEFAULT = OdtConfig()


def feedback_text(tags: Sequence[str], status: str, config: OdtConfig = _DEFAULT, details: str = "") -> str:
    """The feedback message for ``tags``; the fallback when either side is unparsable, the
    neutral message when the structure matches (no tags). ``details`` (an execution error, a
    result preview) follows the descriptions when the environment's feedback level asks for it."""
    suffix = f" {details.strip()}" if details.strip() else ""
    if status != "ok":
        return feedback_prompt(config.fallback_message + suffix, db_engine=config.db_engine)
    if not tags:
        return feedback_prompt(config.neutral_message + suffix, db_engine=config.db_engine)
    descriptions = " ".join(TAGS[tag].description for tag in tags)
    return feedback_prompt(descriptions + suffix, codes=tags, db_engine=config.db_engine)
