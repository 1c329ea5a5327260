"""Meaning-preserving rewrites of SQL, for invariance tests of the ODT.

A rewrite keeps what a query means and changes only what the ODT must not see: table alias names,
whitespace, keyword and identifier case, and the order of AND-ed conditions. Rewrites work on
sqlglot's syntax tree from :func:`progress_sql.sql.parse.parse_sql`, after the ODT's double-quote
rule (:func:`progress_sql.sql.normalize.resolve_double_quoted`), so that ``WHERE x = "Republic"``
stays a string comparison.

The tree is printed in SQLite's dialect with two changes. A parenthesized set-operation arm stays a
parenthesized arm (SQLite's generator turns ``(SELECT ... LIMIT 3) INTERSECT ...`` into
``SELECT * FROM (SELECT ... LIMIT 3) INTERSECT ...``, a different tree). Quoted identifiers are
written in backticks, not double quotes. Both mean the same to SQLite when the column exists, but without a schema the
ODT reads a double-quoted token in a value position as a string (SQLite's rule), so printing BIRD's
```County Name` = 'Alameda'`` as ``"County Name" = 'Alameda'`` would change the query the ODT sees.

>>> rename_aliases_sql("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.singer_id")
'SELECT alias_a.name FROM singer AS alias_a JOIN concert AS alias_b ON alias_a.id = alias_b.singer_id'
>>> reverse_conjuncts_sql("SELECT a FROM t WHERE b = 1 AND c = 2 AND (d = 3 OR e = 4)")
'SELECT a FROM t WHERE (d = 3 OR e = 4) AND c = 2 AND b = 1'
>>> layout = shuffle_layout("SELECT a FROM t WHERE b = 'Mixed Case'", seed=3)
>>> layout != "SELECT a FROM t WHERE b = 'Mixed Case'", "'Mixed Case'" in layout
(True, True)
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

from sqlglot import exp
from sqlglot.dialects.sqlite import SQLite

from progress_sql.sql.normalize import resolve_double_quoted
from progress_sql.sql.parse import ParseFailure, parse_sql


class BacktickSQLite(SQLite):
    """SQLite, printing quoted identifiers in backticks (SQLite reads them as identifiers only)."""

    class Tokenizer(SQLite.Tokenizer):
        IDENTIFIERS = ["`", '"', ("[", "]")]  # noqa: RUF012 (sqlglot's own convention)


_QUERY_TYPES = (exp.Query, exp.Subquery)


def parse_resolved(sql: str) -> exp.Expr:
    """Parse with the project's entry point and apply the double-quote rule; the SQL must parse."""
    tree = parse_sql(sql)
    if isinstance(tree, ParseFailure):
        raise ValueError(f"cannot rewrite unparsable SQL ({tree.reason}): {sql}")
    return resolve_double_quoted(tree, sql)


def _level_nodes(root: exp.Expr) -> list[exp.Expr]:
    """Nodes of ``root``'s query level: nested queries are returned but not entered."""
    found: list[exp.Expr] = []
    stack = list(root.iter_expressions())
    while stack:
        node = stack.pop()
        found.append(node)
        if not isinstance(node, _QUERY_TYPES):
            stack.extend(node.iter_expressions())
    return found


class _AliasNamer:
    def __init__(self) -> None:
        self.count = 0

    def fresh(self) -> str:
        index, self.count = self.count, self.count + 1
        letters = ""
        while True:
            index, rest = divmod(index, 26)
            letters = chr(ord("a") + rest) + letters
            if index == 0:
                return f"alias_{letters}"
            index -= 1


def _sources(select: exp.Select) -> list[exp.Expr]:
    from_clause = select.args.get("from_")
    sources = [from_clause.this] if from_clause is not None else []
    return sources + [join.this for join in select.args.get("joins") or ()]


def _rename_level(node: exp.Expr, inherited: Mapping[str, str], namer: _AliasNamer, add_aliases: bool) -> None:
    mapping = dict(inherited)
    if isinstance(node, exp.Select):
        sources = _sources(node)
        table_names = [s.name.lower() for s in sources if isinstance(s, exp.Table)]
        for source in sources:
            old = source.alias
            if old:
                new = namer.fresh()
                mapping[old.lower()] = new
                source.set("alias", exp.TableAlias(this=exp.to_identifier(new)))
            elif (
                add_aliases
                and isinstance(source, exp.Table)
                and isinstance(source.this, exp.Identifier)
                and not source.args.get("db")
                and table_names.count(source.name.lower()) == 1
            ):
                new = namer.fresh()
                mapping[source.name.lower()] = new
                source.set("alias", exp.TableAlias(this=exp.to_identifier(new)))
    for child in _level_nodes(node):
        if isinstance(child, _QUERY_TYPES):
            _rename_level(child, mapping, namer, add_aliases)
        elif isinstance(child, exp.Column) and not child.args.get("db"):
            new_qualifier = mapping.get(child.table.lower()) if child.table else None
            if new_qualifier is not None:
                child.set("table", exp.to_identifier(new_qualifier))


def rename_aliases(tree: exp.Expr, *, add_aliases: bool = True) -> exp.Expr:
    """Give every table alias a fresh name (``alias_a``, ``alias_b``, ...), scope by scope, and
    (with ``add_aliases``) alias every unaliased base table that occurs once in its scope; column
    qualifiers follow, correlated references included. Works on a copy."""
    tree = tree.copy()
    _rename_level(tree, {}, _AliasNamer(), add_aliases)
    return tree


def _reverse_and(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.And):
        return exp.and_(*reversed(list(node.flatten())), copy=False)
    return node


def reverse_conjuncts(tree: exp.Expr) -> exp.Expr:
    """Reverse the order of every AND chain (WHERE, ON, HAVING and nested conditions). Works on a copy."""
    return tree.transform(_reverse_and)


def _parenthesize_arm(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.SetOperation):
        for key in ("this", "expression"):
            arm = node.args.get(key)
            if isinstance(arm, exp.Select) and any(arm.args.get(m) for m in ("order", "limit", "offset")):
                node.set(key, exp.Subquery(this=arm))
    return node


def to_sql(tree: exp.Expr) -> str:
    """Print ``tree`` (a copy) in SQLite's dialect with backtick-quoted identifiers and explicit
    parentheses around set-operation arms that carry their own ORDER BY / LIMIT."""
    return tree.transform(_parenthesize_arm).sql(dialect=BacktickSQLite)


# A single-quoted string, a quoted identifier, a run of whitespace, or anything else up to those.
_PIECES = re.compile(r"'(?:[^']|'')*'|`[^`]*`|\[[^\]]*\]|\s+|[(),]|[^\s'`\[(),]+")
_SPACES = (" ", "  ", "\n", "\n    ", "\t", " \n ")


def shuffle_layout(sql: str, seed: int) -> str:
    """Change whitespace and the case of keywords and identifiers; string literals are untouched.

    Every whitespace run becomes a random mix of spaces, tabs and newlines, parentheses and commas
    get optional spaces, and every word is upper-, lower- or title-cased at random.
    """
    rng = random.Random(seed)
    out: list[str] = []
    for piece in _PIECES.findall(sql):
        if piece.startswith("'"):
            out.append(piece)
        elif piece.isspace():
            out.append(rng.choice(_SPACES))
        elif piece in "(),":
            out.append(rng.choice(("", " ", "\n")) + piece + rng.choice(("", " ", "  ")))
        else:
            out.append(rng.choice((str.upper, str.lower, str.title, str.swapcase))(piece))
    return "".join(out)


def rename_aliases_sql(sql: str) -> str:
    return to_sql(rename_aliases(parse_resolved(sql)))


def reverse_conjuncts_sql(sql: str) -> str:
    return to_sql(reverse_conjuncts(parse_resolved(sql)))


def rewrite(sql: str, seed: int) -> str:
    """All rewrites at once: fresh aliases, reversed AND chains, shuffled layout and case."""
    tree = reverse_conjuncts(rename_aliases(parse_resolved(sql)))
    return shuffle_layout(to_sql(tree), seed)
