"""F_lex ignores SQL comments and applies its length limit after stripping (issue 16)."""

from __future__ import annotations

from progress_sql.sql.lexical import MAX_LEXICAL_CHARS, lexical_similarity, sql_tokens

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
