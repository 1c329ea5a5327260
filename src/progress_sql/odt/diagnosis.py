"""``diagnose``: compare a predicted SQL with the gold SQL through their ODTs.

The gold side is prepared once per example (:func:`prepare_gold`) and reused for every prediction.

>>> gold = prepare_gold("SELECT name FROM country WHERE government != 'Republic'")
>>> d = diagnose('select NAME from country where government <> "Republic";', gold)
>>> d.f_struct, d.f_lex, d.tags
(1.0, 1.0, ())
>>> d = diagnose("SELECT name FROM country WHERE government != 'Monarchy'", gold)
>>> d.f_struct, d.tags, d.f < 1.0
(1.0, (), True)
>>> diagnose("SELEC name FROM", gold).tags
('PARSE_ERROR',)

Tags found in a nested query carry its location, and the feedback says where:

>>> gold = prepare_gold("SELECT name FROM singer WHERE age > (SELECT avg(age) FROM singer)")
>>> d = diagnose("SELECT name FROM singer WHERE age > (SELECT max(age) FROM singer)", gold)
>>> [str(finding) for finding in d.findings]
['SELECT_ERROR@where', 'AGGREGATION_MISMATCH@where', 'SUBQUERY_ERROR@where']
>>> print(d.feedback.split(". Revise")[0])  # doctest: +NORMALIZE_WHITESPACE
Feedback: your previous SQL has structural issues: SELECT_ERROR, AGGREGATION_MISMATCH, SUBQUERY_ERROR. In the
subquery in WHERE: SELECT projection differs from reference. Aggregation usage differs from reference. A nested
query is structured differently from reference

With a schema, SQLite itself judges the syntax first (sqlglot accepts more than SQLite does):

>>> from progress_sql.data.schema import Schema
>>> schema = Schema.from_mapping({"singer": ["singer_id", "name", "age"]})
>>> d = diagnose("SELECT name FROM singer GROUP BY", prepare_gold("SELECT name FROM singer", schema))
>>> d.status, d.tags, d.reason
('pred_unparsable', ('PARSE_ERROR',), 'SQLite: incomplete input')
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from functools import lru_cache

from progress_sql.data.schema import Schema
from progress_sql.odt.build import TreeSwitches, build_odt
from progress_sql.odt.config import OdtConfig
from progress_sql.odt.dml import compare_scripts, is_write_script, script_profiles
from progress_sql.odt.records import Diagnosis, DiagnosisStatus, GoldReference
from progress_sql.odt.score import compare_trees
from progress_sql.odt.tags import TAG_ORDER, Finding
from progress_sql.sql.lexical import bigrams, lexical_similarity
from progress_sql.sql.parse import ParseFailure
from progress_sql.sql.verdict import engine_rejection, syntax_rejection

_DEFAULT = OdtConfig()


def tree_switches(config: OdtConfig) -> TreeSwitches:
    """The build-time switches of ``config`` (how both trees are built)."""
    if config is _DEFAULT:  # the reward loop's case: no record built per diagnosis
        return _DEFAULT_SWITCHES
    return TreeSwitches(config.inline_ctes, config.implicit_joins, config.nested_everywhere)


_DEFAULT_SWITCHES = TreeSwitches(_DEFAULT.inline_ctes, _DEFAULT.implicit_joins, _DEFAULT.nested_everywhere)


def prepare_gold(sql: str, schema: Schema | None = None, config: OdtConfig = _DEFAULT) -> GoldReference:
    """Parse, profile and tokenize a gold query once."""
    tree = build_odt(sql, schema, dialect=config.dialect, switches=tree_switches(config))
    return GoldReference(sql, tree, bigrams(sql), schema)


def diagnose(
    pred_sql: str,
    gold: GoldReference | str,
    schema: Schema | None = None,
    config: OdtConfig = _DEFAULT,
) -> Diagnosis:
    """Diagnose ``pred_sql`` against ``gold``; never raises on the prediction, scores stay in [0, 1].

    ``schema`` defaults to the one the gold reference was prepared with.
    """
    if isinstance(gold, str):
        gold = prepare_gold(gold, schema, config)
    schema = schema if schema is not None else gold.schema
    pred_text = pred_sql if isinstance(pred_sql, str) else ""
    f_lex = lexical_similarity(pred_text, gold.grams)
    if isinstance(gold.tree, ParseFailure):
        if is_write_script(gold.sql, config.dialect):  # a write task's reference (odt/dml.py)
            return _diagnose_write(pred_text, gold.sql, schema, f_lex, config)
        return _unparsable("gold_unparsable", (), f_lex, gold.tree.reason, config)
    pred_tree = build_odt(pred_text, schema, dialect=config.dialect, switches=tree_switches(config))
    if isinstance(pred_tree, ParseFailure):
        return _unparsable("pred_unparsable", ("PARSE_ERROR",), f_lex, pred_tree.reason, config)
    # The engine's verdict only where sqlglot built a tree: what sqlglot refuses, the engine refuses too.
    rejection = _rejection(pred_text, schema, config)
    if rejection is not None:
        return _unparsable("pred_unparsable", ("PARSE_ERROR",), f_lex, rejection, config)
    comparison = compare_trees(pred_tree, gold.tree, config)
    findings, tags = _reported(comparison.findings, config)
    return Diagnosis(
        status="ok",
        f_struct=comparison.score,
        f_lex=f_lex,
        tags=tags,
        features=comparison.features,
        findings=findings,
        config=config,
    )


def _diagnose_write(pred: str, gold_sql: str, schema: Schema | None, f_lex: float, config: OdtConfig) -> Diagnosis:
    """A prediction against a write reference script: statement by statement (odt/dml.py)."""
    gold_profiles = script_profiles(gold_sql, config.dialect)
    pred_profiles = script_profiles(pred, config.dialect)
    if isinstance(pred_profiles, ParseFailure):
        return _unparsable("pred_unparsable", ("PARSE_ERROR",), f_lex, pred_profiles.reason, config)
    assert not isinstance(gold_profiles, ParseFailure)  # is_write_script said it parses
    comparison = compare_scripts(pred_profiles, gold_profiles, schema, config)
    if config.tag_set is None and not config.tag_order:  # the script's own finding order
        tags = tuple(sorted({f.tag for f in comparison.findings}, key=TAG_ORDER.__getitem__))
        return Diagnosis("ok", comparison.score, f_lex, tags, findings=comparison.findings, config=config)
    findings, tags = _reported(comparison.findings, config)
    return Diagnosis("ok", comparison.score, f_lex, tags, findings=findings, config=config)


def _rejection(pred: str, schema: Schema | None, config: OdtConfig) -> str | None:
    """The verdict ``config.verdict`` names: the engine's against the schema (when one is given), or
    its parser's on syntax alone (docs/odt.md#the-parser-sqlglot-beside-jsqlparser-46)."""
    if config.verdict == "syntax":
        return syntax_rejection(pred, config.dialect)
    return engine_rejection(pred, schema.tables, config.dialect) if schema is not None else None


def _reported(found: Collection[Finding], config: OdtConfig) -> tuple[tuple[Finding, ...], tuple[str, ...]]:
    """The findings ``config`` reports (its tag set) in report order, and their distinct codes."""
    if not found:  # a third of real predictions
        return (), ()
    kept = found if config.tag_set is None else [f for f in found if config.emits(f.tag)]
    if len(kept) == 1:  # nothing to order (29% of the rest, on five systems' Spider predictions)
        (only,) = kept
        return (only,), (only.tag,)
    rank = _tag_rank(config.tag_order)
    findings = tuple(sorted(kept, key=lambda f: (len(f.location), f.location, rank[f.tag])))
    return findings, tuple(sorted({f.tag for f in findings}, key=rank.__getitem__))


@lru_cache(maxsize=8)
def _tag_rank(first: tuple[str, ...]) -> Mapping[str, int]:
    """Report order: the main query first, then each location in path order; within a location the
    codes of ``first`` in its order, then the rest in catalogue order."""
    if not first:
        return TAG_ORDER
    rest = [tag for tag in TAG_ORDER if tag not in first]
    return {tag: index for index, tag in enumerate((*first, *rest))}


def _unparsable(
    status: DiagnosisStatus, tags: tuple[str, ...], f_lex: float, reason: str, config: OdtConfig
) -> Diagnosis:
    findings = tuple(Finding(tag) for tag in tags)
    return Diagnosis(status, 0.0, f_lex, tags, reason=reason, findings=findings, config=config)
