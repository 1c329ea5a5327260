"""F_lex ignores SQL comments and applies its length limits after stripping, before any per-character
work (issues 16 and 36)."""

from __future__ import annotations

import tracemalloc

from progress_sql.sql.lexical import MAX_LEXICAL_CHARS, MAX_LEXICAL_SCAN, lexical_similarity, sql_tokens

GOLD = "SELECT name FROM singer"


def test_comments_are_not_tokens() -> None:
    assert lexical_similarity("SELECT name -- the name\nFROM singer /* c */", GOLD) == 1.0
    assert lexical_similarity("/* leading */ SELECT name FROM singer; -- trailing", GOLD) == 1.0


def test_comment_markers_inside_strings_stay_text() -> None:
    assert sql_tokens("SELECT 'a -- b', '/* c */' FROM t") == ["select", "a -- b", ",", "/* c */", "from", "t"]


def test_unterminated_block_comment_runs_to_the_end() -> None:
    assert sql_tokens("SELECT 1 /* never closed FROM t") == ["select", "1"]


def test_limit_counts_after_stripping() -> None:
    assert lexical_similarity(" " * 5_000_000 + GOLD, GOLD) == 1.0
    assert lexical_similarity("/*" + "x" * 200_000 + "*/ " + GOLD, GOLD) == 1.0
    long_tail = GOLD + " WHERE " + " AND ".join(["a = 1"] * 50_000)
    assert sum(map(len, sql_tokens(long_tail))) <= MAX_LEXICAL_CHARS


def test_the_scan_is_capped_before_any_per_character_work() -> None:
    """A 20 MB literal (issue 36: 2.7 GB and seconds before the cap and the unrolled string pattern)
    is read as its first MAX_LEXICAL_SCAN characters, in a process that stays small."""
    huge = "SELECT '" + "x" * 20_000_000 + "' FROM singer"
    assert sql_tokens(huge) == sql_tokens(huge[:MAX_LEXICAL_SCAN])
    # Python's own allocations while scoring it (tracemalloc: a process's peak RSS would also count what
    # the process it was forked from had, which getrusage keeps across fork and exec)
    tracemalloc.start()
    try:
        lexical_similarity(huge, GOLD)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20  # bytes: a few times the capped scan, never the gigabytes of the whole text


def test_quoted_strings_keep_their_escaped_quotes() -> None:
    assert sql_tokens("SELECT 'it''s', \"a\"\"b\" FROM t") == ["select", "it's", ",", 'a"b', "from", "t"]
    assert sql_tokens("SELECT 'open ''quote") == ["select", "'open ''quote"]  # unterminated: kept as written
