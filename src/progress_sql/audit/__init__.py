"""Gold-query audit: mechanical checks that find wrong or ambiguous gold queries without an LLM.

Each check has a stable id from the research catalogue (docs/audit.md; G01 ... G24), a short name and
a family: ``static`` checks read the syntax tree, ``execution`` checks run the gold once on its
database, ``perturbation`` checks run rewritten golds or the gold on temporary copies whose rows are
stored in another order. :mod:`.catalogue` holds the registry, :mod:`.runner` audits a dataset in
parallel over databases, :mod:`.filters` turns checks into named data filters for RL.
"""

from __future__ import annotations

from progress_sql.audit.catalogue import CHECKS, Check, Finding, resolve_checks
from progress_sql.audit.runner import AuditRecord, audit_examples

__all__ = ["CHECKS", "AuditRecord", "Check", "Finding", "audit_examples", "resolve_checks"]
