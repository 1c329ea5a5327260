"""The ODT of write scripts: INSERT / UPDATE / DELETE statements profiled by clause (statement kind,
target table, INSERT column list, VALUES shape or source query, SET assignments, WHERE) and compared
statement by statement (docs/odt.md#write-statements). A WHERE or an INSERT's source query is
compared with the SELECT machinery (:func:`~progress_sql.odt.score.compare_trees`), so nested
queries get their usual located tags; literals are placeholders, as everywhere in the ODT.

>>> def compare(pred, gold):
...     return compare_scripts(script_profiles(pred), script_profiles(gold))
>>> c = compare("DELETE FROM singer", "DELETE FROM singer WHERE age > 40")
>>> [str(finding) for finding in c.findings], round(c.score, 3)
(['DML_WHERE_MISSING'], 0.5)
>>> compare("UPDATE singer SET age = 1 WHERE singer_id = 2", "UPDATE singer SET age = 1 WHERE singer_id = 2").findings
()
>>> c = compare("INSERT INTO singer (name) SELECT name FROM artist",
...             "INSERT INTO singer (name) SELECT name FROM artist WHERE age > 3")
>>> [str(finding) for finding in c.findings]
['INSERT_SOURCE_ERROR', 'WHERE_MISSING@insert_source']

A prediction is diagnosed against a write reference by :func:`progress_sql.odt.diagnose` (its gold
from :func:`progress_sql.odt.prepare_gold`), which calls :func:`compare_scripts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from sqlglot import exp

from progress_sql.data.schema import Schema
from progress_sql.odt.build import odt_of
from progress_sql.odt.config import OdtConfig
from progress_sql.odt.tags import TAG_ORDER, Finding
from progress_sql.sql.lexical import jaccard
from progress_sql.sql.parse import (
    DEFAULT_DIALECT,
    MAX_AST_DEPTH,
    MAX_SQL_CHARS,
    ParseFailure,
    ast_depth,
    parens_deeper_than,
    parse_statements,
    strip_sql,
)

DmlKind = Literal["insert", "update", "delete", "other"]
_KINDS: dict[type[exp.Expr], DmlKind] = {exp.Insert: "insert", exp.Update: "update", exp.Delete: "delete"}
#: Where the findings of an INSERT's source query are located (feedback: "the INSERT ... SELECT").
SOURCE_STEP = "insert_source"


@dataclass(frozen=True, slots=True)
class DmlProfile:
    """One write statement by clause (names lower-cased; literals are placeholders in ``assignments``)."""

    kind: DmlKind
    target: str
    columns: tuple[str, ...] = ()
    assignments: frozenset[str] = frozenset()
    where: exp.Expr | None = None
    source: exp.Expr | None = None
    #: (rows, width) of an INSERT ... VALUES; None for a source query.
    values_shape: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class DmlComparison:
    """Score in [0, 1] and findings of a predicted script against the reference script."""

    score: float
    findings: tuple[Finding, ...]


def _placeholders(node: exp.Expr) -> str:
    """SQL text of ``node`` with every literal replaced by ``?`` (the ODT compares structure)."""
    copy = node.copy().transform(lambda n: exp.Placeholder() if isinstance(n, exp.Literal) else n)
    return copy.sql(dialect=DEFAULT_DIALECT).lower()


def _table_name(node: exp.Expr | None) -> str:
    table = node.find(exp.Table) if node is not None and not isinstance(node, exp.Table) else node
    return table.name.lower() if isinstance(table, exp.Table) else ""


def profile_statement(statement: exp.Expr) -> DmlProfile:
    """The clause profile of one parsed statement (``other`` for anything but INSERT / UPDATE / DELETE)."""
    kind = _KINDS.get(type(statement), "other")
    if kind == "insert":
        target = statement.this
        columns: tuple[str, ...] = ()
        if isinstance(target, exp.Schema):
            columns = tuple(c.name.lower() for c in target.expressions)
            target = target.this
        source = statement.expression
        shape = None
        if isinstance(source, exp.Values):
            rows = source.expressions
            shape = (len(rows), len(rows[0].expressions) if rows and isinstance(rows[0], exp.Tuple) else 1)
        return DmlProfile("insert", _table_name(target), columns, source=source, values_shape=shape)
    if kind == "update":
        assignments = frozenset(
            f"{a.this.name.lower()}={_placeholders(a.expression)}" if isinstance(a, exp.EQ) else _placeholders(a)
            for a in statement.expressions
        )
        where = statement.args.get("where")
        return DmlProfile("update", _table_name(statement.this), assignments=assignments, where=where)
    if kind == "delete":
        return DmlProfile("delete", _table_name(statement.this), where=statement.args.get("where"))
    return DmlProfile("other", "")


def parse_script(sql: str, dialect: str = DEFAULT_DIALECT) -> tuple[exp.Expr, ...] | ParseFailure:
    """Every statement of a script, parsed, or why not (limits as for single queries)."""
    text = strip_sql(sql) if isinstance(sql, str) else ""
    if not text:
        return ParseFailure("empty SQL")
    if len(text) > MAX_SQL_CHARS or parens_deeper_than(text, 100):
        return ParseFailure("SQL too long or nested too deeply to analyse")
    statements = parse_statements(text, dialect)
    if isinstance(statements, ParseFailure):
        return statements
    if not statements or any(ast_depth(s) > MAX_AST_DEPTH for s in statements):
        return ParseFailure("no statement" if not statements else "syntax tree too deep")
    return tuple(statements)


@lru_cache(maxsize=4096)
def script_profiles(sql: str, dialect: str = DEFAULT_DIALECT) -> tuple[DmlProfile, ...] | ParseFailure:
    """The profiles of a script's statements (cached: a reference is diagnosed against many predictions)."""
    statements = parse_script(sql, dialect)
    if isinstance(statements, ParseFailure):
        return statements
    return tuple(profile_statement(statement) for statement in statements)


def is_write_script(sql: str, dialect: str = DEFAULT_DIALECT) -> bool:
    """True when ``sql`` parses into INSERT / UPDATE / DELETE statements only."""
    profiles = script_profiles(sql, dialect)
    return not isinstance(profiles, ParseFailure) and all(_complete(p) for p in profiles)


def _complete(profile: DmlProfile) -> bool:
    """A real write statement: a known kind on a named table (an INSERT with rows to insert)."""
    if profile.kind == "other" or not profile.target:
        return False
    return profile.kind != "insert" or profile.source is not None


def _where_comparison(
    pred: DmlProfile, gold: DmlProfile, schema: Schema | None, config: OdtConfig
) -> tuple[float, list[Finding]]:
    if gold.where is None and pred.where is None:
        return 1.0, []
    if pred.where is None:
        return 0.0, [Finding("DML_WHERE_MISSING")]
    if gold.where is None:
        return 0.0, [Finding("DML_WHERE_REDUNDANT")]
    # Both filter: compare them as the WHERE of one SELECT over the reference's target table.
    from progress_sql.odt.score import compare_trees

    def probe(where: exp.Expr) -> exp.Select:
        return exp.select("1").from_(exp.to_table(gold.target or "t")).where(where.this.copy())

    pred_tree, gold_tree = odt_of(probe(pred.where), schema), odt_of(probe(gold.where), schema)
    if isinstance(pred_tree, ParseFailure) or isinstance(gold_tree, ParseFailure):
        return 0.0, [Finding("DML_WHERE_ERROR")]
    comparison = compare_trees(pred_tree, gold_tree, config)
    findings = [
        Finding("DML_WHERE_ERROR") if f.tag == "WHERE_ERROR" and not f.location else f
        for f in comparison.findings
        if f.location or not f.tag.startswith(("WHERE_", "SELECT_", "FROM_"))
    ]
    if comparison.score < 1.0 and not any(f.tag == "DML_WHERE_ERROR" for f in findings):
        findings.append(Finding("DML_WHERE_ERROR"))
    return comparison.score, findings


def _source_comparison(
    pred: DmlProfile, gold: DmlProfile, schema: Schema | None, config: OdtConfig
) -> tuple[float, list[Finding]]:
    if pred.values_shape is not None and gold.values_shape is not None:
        from progress_sql.odt.score import num_sim

        rows = num_sim(pred.values_shape[0], gold.values_shape[0])
        similarity = rows * (1.0 if pred.values_shape[1] == gold.values_shape[1] else 0.5)
        return similarity, [] if similarity >= 1.0 else [Finding("INSERT_VALUES_MISMATCH")]
    if (pred.values_shape is None) != (gold.values_shape is None) or pred.source is None or gold.source is None:
        return 0.0, [Finding("INSERT_SOURCE_ERROR")]
    from progress_sql.odt.score import compare_trees

    pred_tree, gold_tree = odt_of(pred.source, schema), odt_of(gold.source, schema)
    if isinstance(pred_tree, ParseFailure) or isinstance(gold_tree, ParseFailure):
        return 0.0, [Finding("INSERT_SOURCE_ERROR")]
    comparison = compare_trees(pred_tree, gold_tree, config)
    findings = [f.within(SOURCE_STEP) for f in comparison.findings]
    if comparison.score < 1.0:
        findings.insert(0, Finding("INSERT_SOURCE_ERROR"))
    return comparison.score, findings


def compare_statement(
    pred: DmlProfile, gold: DmlProfile, schema: Schema | None = None, config: OdtConfig | None = None
) -> DmlComparison:
    """One predicted statement against one reference statement."""
    config = config or OdtConfig()
    if pred.kind != gold.kind:
        return DmlComparison(0.0, (Finding("DML_KIND_MISMATCH"),))
    findings: list[Finding] = []
    parts = [1.0 if pred.target == gold.target else 0.0]
    if parts[0] < 1.0:
        findings.append(Finding("DML_TARGET_MISMATCH"))
    if gold.kind == "insert":
        if pred.columns == gold.columns:
            columns = 1.0
        else:
            same_set = set(pred.columns) == set(gold.columns)
            columns = 0.5 if same_set else jaccard(set(pred.columns), set(gold.columns))
            findings.append(Finding("INSERT_COLUMNS_MISMATCH"))
        source, source_findings = _source_comparison(pred, gold, schema, config)
        parts += [columns, source]
        findings += source_findings
    if gold.kind == "update":
        assignments = jaccard(pred.assignments, gold.assignments)
        if assignments < 1.0:
            findings.append(Finding("SET_ERROR"))
        parts.append(assignments)
    if gold.kind in ("update", "delete"):
        where, where_findings = _where_comparison(pred, gold, schema, config)
        parts.append(where)
        findings += where_findings
    return DmlComparison(sum(parts) / len(parts), tuple(findings))


def _statement_step(position: int) -> str:
    return "" if position == 1 else f"statement#{position}"


def compare_scripts(
    pred: Sequence[DmlProfile],
    gold: Sequence[DmlProfile],
    schema: Schema | None = None,
    config: OdtConfig | None = None,
) -> DmlComparison:
    """Statements paired in order; a missing or extra statement scores 0 and is tagged."""
    findings: list[Finding] = []
    scores: list[float] = []
    for position, (p, g) in enumerate(zip(pred, gold, strict=False), start=1):
        comparison = compare_statement(p, g, schema, config)
        scores.append(comparison.score)
        findings += [f.within(_statement_step(position)) for f in comparison.findings]
    if len(pred) != len(gold):
        findings.append(Finding("DML_STATEMENT_COUNT_MISMATCH"))
        scores += [0.0] * abs(len(pred) - len(gold))
    ordered = sorted(set(findings), key=lambda f: (len(f.location), f.location, TAG_ORDER.get(f.tag, len(TAG_ORDER))))
    return DmlComparison(sum(scores) / max(1, len(scores)), tuple(ordered))


__all__ = [
    "DmlComparison",
    "DmlProfile",
    "compare_scripts",
    "compare_statement",
    "is_write_script",
    "parse_script",
    "profile_statement",
    "script_profiles",
]
