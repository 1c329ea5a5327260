"""Verbalize a diagnosis as the next user turn (paper, Appendix F, round 2+).

The text names tags and neutral descriptions only; it never quotes the gold SQL. A tag found in a
nested query is described under its location ("In the subquery in WHERE: ..."); the codes stay the
paper's.

>>> print(feedback_text(("SELECT_ERROR", "GROUP_BY_ERROR"), "ok"))  # doctest: +ELLIPSIS
Feedback: your previous SQL has structural issues: SELECT_ERROR, GROUP_BY_ERROR. SELECT projection differs \
from reference. GROUP BY columns are not aligned with reference. Revise your previous answer using these issues. ...
>>> describe_location(("where", "from")), describe_location(("cte:totals",)), describe_location(("union#2",))
('the subquery in FROM inside the subquery in WHERE', 'the CTE totals', 'arm 2 of the UNION')
"""

from __future__ import annotations

from collections.abc import Sequence

from progress_sql.odt.config import OdtConfig
from progress_sql.odt.tags import TAGS, Finding
from progress_sql.prompts import feedback_prompt

_DEFAULT = OdtConfig()

_CLAUSE_PLACES = {
    "select": "the SELECT list",
    "from": "FROM",
    "join": "a JOIN",
    "where": "WHERE",
    "group_by": "GROUP BY",
    "having": "HAVING",
    "order_by": "ORDER BY",
}


def _describe_step(step: str) -> str:
    if step.startswith("cte:"):
        return f"the CTE {step[4:]}"
    if step.startswith("statement#"):  # a write script's later statements (odt/dml.py)
        return f"statement {step.partition('#')[2]} of the script"
    if step == "insert_source":
        return "the query feeding INSERT ... SELECT"
    op, hash_sign, arm = step.partition("#")
    if hash_sign:
        return f"arm {arm} of the {op.replace('-', ' ').upper()}"
    return f"the subquery in {_CLAUSE_PLACES.get(step, step.replace('_', ' ').upper())}"


def describe_location(location: Sequence[str]) -> str:
    """A location path in words, innermost first ('' for the main query)."""
    return " inside ".join(_describe_step(step) for step in reversed(location))


def feedback_text(tags: Sequence[str | Finding], status: str, config: OdtConfig = _DEFAULT, details: str = "") -> str:
    """The feedback message for ``tags`` (codes, or findings with locations); the fallback when either
    side is unparsable, the neutral message when the structure matches (no tags). ``details`` (an
    execution error, a result preview) follows the descriptions when the environment's feedback
    level asks for it."""
    suffix = f" {details.strip()}" if details.strip() else ""
    if status != "ok":
        return feedback_prompt(config.fallback_message + suffix, db_engine=config.db_engine)
    if not tags:
        return feedback_prompt(config.neutral_message + suffix, db_engine=config.db_engine)
    findings = [tag if isinstance(tag, Finding) else Finding(tag) for tag in tags]
    by_location: dict[tuple[str, ...], list[str]] = {}
    for finding in findings:
        descriptions = by_location.setdefault(finding.location, [])
        description = TAGS[finding.tag].description
        if description not in descriptions:
            descriptions.append(description)
    parts = []
    for location, descriptions in by_location.items():
        text = " ".join(descriptions)
        parts.append(f"In {describe_location(location)}: {text}" if location else text)
    codes = tuple(dict.fromkeys(finding.tag for finding in findings))
    return feedback_prompt(" ".join(parts) + suffix, codes=codes, db_engine=config.db_engine)
