"""Lexical alignment: 2-gram Jaccard similarity over normalized SQL tokens (paper, section 4.2;
docs/odt.md#pipeline). A single regular expression tokenizes: it never fails, whatever the input.

>>> lexical_similarity("SELECT name FROM t WHERE x = 'A'", 'select  NAME from T where x = "a";')
1.0
>>> round(lexical_similarity("SELECT a FROM t WHERE x = 1", "SELECT a FROM t WHERE x = 2"), 3)
0.75
"""

from __future__ import annotations

import re
from collections.abc import Set
from itertools import pairwise
from typing import Any

from progress_sql.sql.parse import strip_sql

_TOKEN = re.compile(
    r"""--[^\n]*|/\*[\s\S]*?(?:\*/|\Z)  # a comment: no token, the match is empty (found here so
                                        # that `--` inside a string stays text)
      | ;                        # no token either
      | (                        # a token (the loops unrolled: an alternation inside a repeat costs
                                 # the regex engine memory per character, gigabytes on a long literal):
        '[^']*(?:''[^']*)*(?:'|\Z)   # single-quoted string (an unterminated one runs to the end:
      | "[^"]*(?:""[^"]*)*(?:"|\Z)   # without that, every quote would rescan the rest: quadratic)
      | `[^`]*(?:`|\Z)          # backtick identifier
      | \[[^\]]*(?:\]|\Z)       # bracket identifier
      | \d+(?:\.\d*)?(?:e[+-]?\d+)?
      | \.\d+
      | \w+
      | <>|!=|>=|<=|==|\|\|
      | \S)""",
    re.VERBOSE | re.IGNORECASE,
)
_QUOTES = {"'": "'", '"': '"', "`": "`", "[": "]"}
#: What :func:`_normalize` changes besides case: a quote that may open a quoted token, and ``!=``.
_NEEDS_NORMALIZING = re.compile(r"""['"`\[]|!=""")


def _normalize(token: str) -> str:
    closing = _QUOTES.get(token[0])
    if closing is not None and len(token) >= 2 and token[-1] == closing:
        token = token[1:-1].replace(closing * 2, closing) if closing in "'\"" else token[1:-1]
    token = token.lower()
    return "<>" if token == "!=" else token


#: Lexical similarity reads at most this many characters of tokens (far above any real query); the
#: limit counts what is left after stripping whitespace and comments.
MAX_LEXICAL_CHARS = 100_000
#: ... and scans at most this many characters of the stripped text (comments and whitespace
#: included), cut before any per-character work: the cost of a 20 MB literal is that of 1 MB.
MAX_LEXICAL_SCAN = 10 * MAX_LEXICAL_CHARS


def sql_tokens(sql: str) -> list[str]:
    """Normalized tokens of ``sql``; comments are not tokens.

    >>> sql_tokens("SELECT T1.\\"Name\\" FROM `Singer` AS t1; -- the name")
    ['select', 't1', '.', 'name', 'from', 'singer', 'as', 't1']
    >>> sql_tokens("SELECT /* why */ 1")
    ['select', '1']
    """
    text = strip_sql(sql)[:MAX_LEXICAL_SCAN]
    if len(text) <= MAX_LEXICAL_CHARS:  # the tokens cannot exceed the limit: one pass in C
        if text.isascii():
            # Lower-casing ASCII text lower-cases each token and moves no token boundary (the pattern
            # ignores case); a comment or a `;` matches with an empty group.
            found = list(filter(None, _TOKEN.findall(text.lower())))
            if _NEEDS_NORMALIZING.search(text) is None:
                return found
            return [token if token[0] not in _QUOTES and token != "!=" else _normalize(token) for token in found]
        found = list(filter(None, _TOKEN.findall(text)))
        return [token.lower() if token[0] not in _QUOTES and token != "!=" else _normalize(token) for token in found]
    tokens: list[str] = []
    budget = MAX_LEXICAL_CHARS
    for match in _TOKEN.finditer(text):
        token = match.group(1)
        if not token:
            continue
        budget -= len(token)
        if budget < 0:
            break
        tokens.append(_normalize(token))
    return tokens


def bigrams(sql: str) -> frozenset[tuple[str, ...]]:
    """The set of adjacent token pairs (a one-token query yields its single token)."""
    tokens = sql_tokens(sql)
    if len(tokens) < 2:
        return frozenset((token,) for token in tokens)
    return frozenset(pairwise(tokens))


def jaccard(a: Set[Any], b: Set[Any]) -> float:
    """Jaccard similarity with the paper's conventions: both empty = 1, one empty = 0.

    >>> jaccard(frozenset(), frozenset()), jaccard(frozenset({1}), frozenset()), jaccard({1, 2}, {2, 3})
    (1.0, 0.0, 0.3333333333333333)
    """
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)  # |a | b| without building the union


def lexical_similarity(pred: str, gold: str | frozenset[tuple[str, ...]]) -> float:
    """F_lex: 2-gram Jaccard between ``pred`` and ``gold`` (gold may be pre-computed bigrams)."""
    gold_grams = bigrams(gold) if isinstance(gold, str) else gold
    return jaccard(bigrams(pred), gold_grams)
