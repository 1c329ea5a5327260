"""Gold-query audit: mechanical checks (static, execution, perturbation; ids G01 ... G24) that find
wrong or ambiguous gold queries without an LLM; the modules and families: docs/audit.md#design."""

from __future__ import annotations

from progress_sql.audit.catalogue import CHECKS, resolve_checks
from progress_sql.audit.check import AuditFinding, Check
from progress_sql.audit.runner import AuditRecord, audit_examples

__all__ = ["CHECKS", "AuditFinding", "AuditRecord", "Check", "audit_examples", "resolve_checks"]
