"""Summaries of an audit: counts per check and per database, a Markdown report with examples for
each check, and the records as JSON lines."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from progress_sql.audit.catalogue import CHECKS
from progress_sql.audit.check import Check
from progress_sql.audit.runner import AuditRecord
from progress_sql.runfolder import write_jsonl

#: Examples shown per check in report.md.
EXAMPLES_PER_CHECK = 5


def summarize(records: Sequence[AuditRecord], checks: Sequence[Check]) -> dict[str, Any]:
    """Counts per check and per database (JSON-ready)."""
    per_check = Counter(f for r in records for f in r.fired)
    per_db: dict[str, Counter[str]] = {}
    sizes = Counter(r.db_id for r in records)
    for record in records:
        per_db.setdefault(record.db_id, Counter()).update(record.fired)
    return {
        "examples": len(records),
        "with_findings": sum(1 for r in records if r.findings),
        "database_missing": sum(1 for r in records if not r.db_available),
        "gold_status": dict(Counter(r.gold_status for r in records)),
        "check_errors": sum(len(r.errors) for r in records),
        "checks": {c.id: {"name": c.name, "family": c.family, "fired": per_check.get(c.id, 0)} for c in checks},
        "per_database": {
            db: {"examples": sizes[db], "fired": dict(sorted(per_db.get(db, Counter()).items()))}
            for db in sorted(sizes)
        },
    }


def write_records(records: Sequence[AuditRecord], path: Path) -> None:
    write_jsonl(path, (record.as_dict() for record in records))


def markdown_report(
    records: Sequence[AuditRecord], checks: Sequence[Check], summary: dict[str, Any], title: str
) -> str:
    """report.md: the count table, then a few fired examples with their evidence for each check."""
    lines = [
        f"# Gold-query audit: {title}",
        "",
        f"{summary['examples']} examples; {summary['with_findings']} with at least one finding; "
        f"{summary['database_missing']} without their database (static checks only).",
        "",
        "| id | check | family | fired | share |",
        "|---|---|---|---:|---:|",
    ]
    total = max(1, summary["examples"])
    for item in checks:
        fired = summary["checks"][item.id]["fired"]
        lines.append(f"| {item.id} | {item.name} | {item.family} | {fired} | {100 * fired / total:.2f}% |")
    for item in checks:
        hits = [r for r in records if item.id in r.fired]
        lines += ["", f"## {item.id} {item.name} ({len(hits)})", "", item.summary, ""]
        for record in hits[:EXAMPLES_PER_CHECK]:
            evidence = next(f.evidence for f in record.findings if f.check == item.id)
            lines += [
                f"- #{record.index} `{record.db_id}`: {record.question}",
                f"  - gold: `{' '.join(record.gold_sql.split())}`",
                f"  - evidence: {evidence}",
            ]
    errors = [e for r in records for e in r.errors]
    if errors:
        lines += ["", f"## Check errors ({len(errors)})", "", *(f"- {e}" for e in errors[:20])]
    return "\n".join(lines) + "\n"


def catalogue_table() -> str:
    """The catalogue as a Markdown table (docs/audit.md embeds it)."""
    rows = ["| id | name | family | what fires | fires on | does not fire on |", "|---|---|---|---|---|---|"]
    for c in CHECKS.values():
        summary = c.summary.split(" Fires:")[0].replace("|", "/")
        fires, quiet = (text.replace("|", "/") for text in c.examples)
        rows.append(f"| {c.id} | {c.name} | {c.family} | {summary} | {fires} | {quiet} |")
    return "\n".join(rows)
