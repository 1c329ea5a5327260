"""The only place in progress-sql that calls sqlglot's parser. Model-written SQL is untrusted (empty,
huge, deeply nested, not SQL): :func:`parse_sql` never raises, it returns a :class:`ParseFailure` with
the reason, so that callers treat a bad query as data (limits: docs/odt.md#pipeline, step 1).

>>> parse_sql("SELECT name FROM singer;").sql()
'SELECT name FROM singer'
>>> parse_sql("SELEC name FROM").reason.startswith("syntax error")
True
>>> parse_sql("SELECT 1; SELECT 2").reason
'expected exactly one statement, found 2'
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # sqlglot is imported on the first parse: a process that only judges results skips it
    from sqlglot import exp
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.parser import Parser
    from sqlglot.tokens import Tokenizer

DEFAULT_DIALECT = "sqlite"
#: Longer SQL counts as a parse failure: real queries are far shorter, and a policy that emits
#: megabytes of text must not stall a reward loop.
MAX_SQL_CHARS = 20_000
#: Maximum parenthesis nesting, checked before parsing (sqlglot's parser recurses on parentheses).
MAX_PAREN_DEPTH = 64
#: Maximum depth of the parsed syntax tree (bounds every recursive pass over it).
MAX_AST_DEPTH = 200

_PARENS = re.compile(r"[()]")
#: Invisible characters that editors and models leave around a query (BOM, zero-width spaces).
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060"
_WHITESPACE = "".join(chr(code) for code in range(0x3001) if chr(code).isspace())
#: What :func:`strip_sql` removes at each end (built once: it runs twice in every diagnosis).
_STRIP_LEFT = _WHITESPACE + _INVISIBLE
_STRIP_RIGHT = _STRIP_LEFT + ";"


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """Why a SQL string could not be turned into a single syntax tree."""

    reason: str

    def __bool__(self) -> bool:  # a failure is falsy, so `if tree := parse_sql(...)` reads well
        return False


def strip_sql(sql: str) -> str:
    """Remove surrounding whitespace, invisible characters and trailing semicolons.

    >>> strip_sql("\\ufeff  SELECT 1 ; ; \\u200b\\n")
    'SELECT 1'
    """
    # str.strip with a character set is linear; a regular expression anchored at the end rescans
    # from every position and is quadratic on long runs of whitespace.
    return sql.lstrip(_STRIP_LEFT).rstrip(_STRIP_RIGHT)


def paren_depth(sql: str) -> int:
    """The deepest parenthesis nesting in ``sql`` (quotes are not interpreted; an upper bound).

    >>> paren_depth("SELECT (1 + (2))")
    2
    """
    depth = deepest = 0
    for match in _PARENS.finditer(sql):
        if match.group() == "(":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def parens_deeper_than(sql: str, limit: int) -> bool:
    """Whether ``sql``'s parentheses nest deeper than ``limit`` (:func:`paren_depth`). Text with at most
    ``limit`` opening parentheses cannot: most queries need no scan, one count in C."""
    return sql.count("(") > limit and paren_depth(sql) > limit


def ast_depth(tree: exp.Expr) -> int:
    """Depth of a syntax tree, computed without recursion (level by level: no per-node bookkeeping)."""
    depth = 0
    level = [tree]
    while level:
        depth += 1
        level = [child for node in level for child in node.iter_expressions()]
    return depth


def parse_sql(
    sql: object,
    *,
    dialect: str = DEFAULT_DIALECT,
    max_chars: int = MAX_SQL_CHARS,
    max_paren_depth: int = MAX_PAREN_DEPTH,
    max_ast_depth: int = MAX_AST_DEPTH,
) -> exp.Expr | ParseFailure:
    """Parse exactly one SQL statement, or say why not.

    Trailing semicolons and surrounding whitespace are ignored. Input over ``max_chars`` characters
    or nested deeper than the limits is a failure, never a crash.
    """
    text = strip_sql(sql) if isinstance(sql, str) else None  # callers may hand over model output as-is
    if text is None:
        return ParseFailure(f"expected a string, got {type(sql).__name__}")
    if not text:
        return ParseFailure("empty SQL")
    if len(text) > max_chars:
        return ParseFailure(f"SQL longer than {max_chars} characters ({len(text)})")
    if parens_deeper_than(text, max_paren_depth):
        return ParseFailure(f"parentheses nested deeper than {max_paren_depth}")
    parsed = _parse_counted(text, dialect)
    if isinstance(parsed, ParseFailure):
        return parsed
    statements, tokens = parsed
    if len(statements) != 1:
        return ParseFailure(f"expected exactly one statement, found {len(statements)}")
    tree = statements[0]
    if not within_depth(tree, tokens, max_ast_depth):
        return ParseFailure(f"syntax tree deeper than {max_ast_depth}")
    return tree


def parse_statements(text: str, dialect: str = DEFAULT_DIALECT) -> list[exp.Expr] | ParseFailure:
    """Every statement of ``text`` (stripped and checked against the size limits by the caller), or
    why sqlglot could not parse it: its errors, and its bugs, are values."""
    parsed = _parse_counted(text, dialect)
    return parsed if isinstance(parsed, ParseFailure) else parsed[0]


def within_depth(tree: exp.Expr, tokens: int, max_ast_depth: int = MAX_AST_DEPTH) -> bool:
    """Whether ``tree``, parsed from ``tokens`` tokens, is at most ``max_ast_depth`` deep. sqlglot's
    trees are no deeper than their token count (every level of nesting takes a token of its own:
    tests/sql/test_parse.py checks it on generated nesting and on every real query at hand), so a
    tree of at most half the limit in tokens needs no walk: most queries, a tenth of a parse saved."""
    return 2 * tokens <= max_ast_depth or ast_depth(tree) <= max_ast_depth


def _parse_counted(text: str, dialect: str) -> tuple[list[exp.Expr], int] | ParseFailure:
    """The statements of ``text`` and how many tokens they took, or why they could not be parsed."""
    try:
        tokenizer, parser = _parsing_pair(dialect)
        tokens = tokenizer.tokenize(text)
        return [s for s in parser.parse(tokens, text) if s is not None], len(tokens)
    except RecursionError:
        return ParseFailure("SQL nested too deeply to parse")
    except Exception as error:  # untrusted input: a parser bug must not crash a reward loop
        # Imported on failure only: an import statement costs a parse about 1% (a lookup each call).
        from sqlglot.errors import SqlglotError

        if isinstance(error, SqlglotError):
            return ParseFailure(f"syntax error: {_first_line(error)}")
        return ParseFailure(f"parser failure ({type(error).__name__}): {_first_line(error)}")


@cache
def _dialect(name: str) -> Dialect:
    """One instance per dialect name (sqlglot would build one per parse; parsing leaves it unchanged)."""
    from sqlglot.dialects.dialect import Dialect

    return Dialect.get_or_raise(name)


_PAIRS = threading.local()


def _parsing_pair(dialect: str) -> tuple[Tokenizer, Parser]:
    """This thread's tokenizer and parser for ``dialect``: what ``sqlglot.parse`` does, without
    building both anew for every statement (a third of a short query's parse time). Each resets
    its state at the start of every call, so one pair serves every parse of its thread."""
    pairs: dict[str, tuple[Tokenizer, Parser]] | None = getattr(_PAIRS, "pairs", None)
    if pairs is None:
        pairs = _PAIRS.pairs = {}
    pair = pairs.get(dialect)
    if pair is None:
        instance = _dialect(dialect)
        pair = pairs[dialect] = (instance.tokenizer(), instance.parser())
    return pair


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__
