"""sqlglot's tree depth against its token count: what lets ``parse_sql`` skip the depth walk for a
short query (``within_depth``). The walk bounds every recursive pass over a tree; skipping it is only
safe while no tree is deeper than the tokens it was parsed from."""

from __future__ import annotations

from pathlib import Path

import pytest

from progress_sql.sql.parse import MAX_AST_DEPTH, _parsing_pair, ast_depth, parse_sql, strip_sql, within_depth
from tests.odt.test_robustness import DEEP_CONSTRUCTS


def _depth_and_tokens(sql: str) -> list[tuple[int, int]]:
    """(depth, token count) of each statement of ``sql``; none where sqlglot cannot parse it."""
    if not parse_sql(sql, max_ast_depth=10_000):
        return []
    tokenizer, parser = _parsing_pair("sqlite")
    text = strip_sql(sql)
    tokens = tokenizer.tokenize(text)
    return [(ast_depth(tree), len(tokens)) for tree in parser.parse(tokens, text) if tree is not None]


MORE_NESTING = {
    "IS NOT NULL chain": lambda n: "SELECT a" + " IS NOT NULL" * n + " FROM t",
    "COLLATE chain": lambda n: "SELECT a" + " COLLATE NOCASE" * n + " FROM t",
    "CAST chain": lambda n: "SELECT " + "CAST(" * n + "a" + " AS INT)" * n + " FROM t",
    "parentheses": lambda n: "SELECT " + "(" * n + "a" + ")" * n + " FROM t",
    "IN subqueries": lambda n: "SELECT a FROM t WHERE a IN " + "(SELECT a FROM t WHERE a IN " * n + "(1)" + ")" * n,
    "NOT EXISTS": lambda n: "SELECT a FROM t WHERE " + "NOT EXISTS (SELECT a FROM t WHERE " * n + "1" + ")" * n,
    "dotted name": lambda n: "SELECT " + ".".join(["a"] * n) + " FROM t",
    "JSON arrows": lambda n: "SELECT a" + " -> '$.b'" * n + " FROM t",
}


@pytest.mark.parametrize("construct", sorted({**DEEP_CONSTRUCTS, **MORE_NESTING}))
@pytest.mark.parametrize("n", [1, 2, 5, 20, 60])
def test_no_tree_is_deeper_than_its_tokens(construct: str, n: int) -> None:
    sql = {**DEEP_CONSTRUCTS, **MORE_NESTING}[construct](n)
    measured = _depth_and_tokens(sql)
    assert measured or construct == "bitwise not chain"  # sqlglot reads `~~` as a GLOB operator
    for depth, tokens in measured:
        assert depth <= tokens, (construct, n, depth, tokens)


def test_no_real_query_is_deeper_than_its_tokens(shared_data: Path) -> None:
    """Every gold of Spider train and dev and BIRD dev, and five systems' Spider dev predictions."""
    texts = []
    for name in ("spider/dev_gold.sql", "spider/train_gold.sql", "bird/dev_gold.sql"):
        lines = (shared_data / name).read_text(encoding="utf-8").splitlines()
        texts += [line.rpartition("\t")[0] for line in lines if line.strip()]
    for path in sorted((shared_data / "predictions" / "spider-dev").glob("model_*.txt")):
        texts += path.read_text(encoding="utf-8").splitlines()
    checked = 0
    for text in texts:
        for depth, tokens in _depth_and_tokens(text):
            assert depth <= tokens, text
            checked += 1
    assert checked > 15_000


def test_the_walk_decides_only_past_half_the_limit() -> None:
    short = parse_sql("SELECT " + "NOT " * 40 + "a FROM t")
    assert short
    assert within_depth(short, MAX_AST_DEPTH // 2)
    deep_sql = "SELECT a FROM t WHERE " + " AND ".join(f"a = {i}" for i in range(MAX_AST_DEPTH + 10))
    deep = parse_sql(deep_sql, max_ast_depth=10_000)
    assert deep
    tokens = _depth_and_tokens(deep_sql)[0][1]
    assert not within_depth(deep, tokens)
    assert within_depth(deep, tokens, max_ast_depth=10_000)
    assert parse_sql(deep_sql).reason == f"syntax tree deeper than {MAX_AST_DEPTH}"
