"""Token-level SQL text rewrites that keep the original text of everything they do not touch (the
Spider evaluator rewrites text; a sqlglot round trip would re-quote ``"Republic"`` or reformat numbers).

>>> strip_distinct('SELECT DISTINCT name, count(DISTINCT x) FROM t WHERE a = "distinct"')
'SELECT  name, count( x) FROM t WHERE a = "distinct"'
>>> first_statement("SELECT 1; SELECT 2")
'SELECT 1;'
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_TOKEN = re.compile(
    r"""
      (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
    | (?P<string>'(?:[^']|'')*(?:'|\Z))
    | (?P<quoted>"(?:[^"]|"")*(?:"|\Z)|`[^`]*(?:`|\Z)|\[[^\]]*(?:\]|\Z))
    | (?P<word>\w+)
    | (?P<space>\s+)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def tokens(sql: str) -> Iterator[tuple[str, str]]:
    """Yield ``(kind, text)`` pairs whose texts concatenate back to ``sql``."""
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup
        assert kind is not None
        yield kind, match.group()


def strip_distinct(sql: str) -> str:
    """Drop every ``DISTINCT`` keyword token (any case), as the Spider evaluator does by default."""
    if "distinct" not in sql.lower():  # most queries: nothing to tokenize
        return sql
    return "".join(text for kind, text in tokens(sql) if not (kind == "word" and text.lower() == "distinct"))


def first_statement(sql: str) -> str:
    """The text up to and including the first top-level ``;`` (all of it when there is none).

    The Spider evaluator strips DISTINCT through ``sqlparse.parse(sql)[0]``, which keeps only the
    first statement; reproducing its verdicts needs the same truncation.
    """
    if ";" not in sql:
        return sql
    out: list[str] = []
    for kind, text in tokens(sql):
        out.append(text)
        if kind == "other" and text == ";":
            break
    return "".join(out)


def has_word_sequence(sql: str, words: tuple[str, ...]) -> bool:
    """Whether the words occur consecutively (whitespace and comments between them) outside literals.

    >>> has_word_sequence("SELECT a FROM t ORDER\\n BY a", ("order", "by"))
    True
    >>> has_word_sequence("SELECT 'order by' FROM t", ("order", "by"))
    False
    """
    seen = [text.lower() for kind, text in tokens(sql) if kind == "word" or kind in ("string", "quoted", "other")]
    width = len(words)
    return any(tuple(seen[i : i + width]) == words for i in range(len(seen) - width + 1))


_SPACED_OPERATORS = (("> =", ">="), ("< =", "<="), ("! =", "!="))


def fix_spaced_operators(sql: str) -> str:
    """Join ``> =``, ``< =`` and ``! =`` as the Spider evaluator's post-processing does (plain text)."""
    for spaced, joined in _SPACED_OPERATORS:
        sql = sql.replace(spaced, joined)
    return sql


_CURRENT_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)


def replace_current_year(sql: str) -> str:
    """Rewrite MySQL's ``YEAR(CURDATE())`` to 2020, as the Spider evaluator does before executing."""
    return _CURRENT_YEAR.sub("2020", sql)
