"""The peers' rewards, for the paper's ablations and users' comparisons.

Each scores the final turn of a trajectory (in single-turn training the trajectory has one turn).
None of them treats a failed gold query as a match: a turn only matches when the environment says
so, and the environment never compares against a failed gold result.

>>> from progress_sql.types import Trajectory, Turn
>>> right = Trajectory((Turn("SELECT 1", True, True, True, 1.0, "<think>x</think><sql>SELECT 1</sql>"),))
>>> one_shot(right, RewardContext("SELECT 1")).total, arctic(right, RewardContext("SELECT 1")).total
(3.0, 1.0)
"""

from __future__ import annotations

from sqlglot import exp

from progress_sql.rewards.context import RewardContext
from progress_sql.sql.lexical import jaccard, lexical_similarity
from progress_sql.sql.parse import ParseFailure, parse_sql
from progress_sql.types import RewardBreakdown, Trajectory, Turn


def _final(trajectory: Trajectory) -> Turn | None:
    return trajectory.turns[-1] if trajectory.turns else None


def _breakdown(name: str, parts: tuple[tuple[str, float], ...]) -> RewardBreakdown:
    return RewardBreakdown(sum(value for _, value in parts), parts, name, "fixed")


def one_shot(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    """The paper's single-turn baseline (Appendix E.1): 2.0 match + 0.5 executable + 0.5 format."""
    turn = _final(trajectory)
    if turn is None:
        return _breakdown("one-shot-v1", (("correct", 0.0), ("exec", 0.0), ("fmt", 0.0)))
    return _breakdown(
        "one-shot-v1",
        (("correct", 2.0 * turn.match), ("exec", 0.5 * turn.executable), ("fmt", 0.5 * turn.format_ok)),
    )


def skyrl_sql(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    """SkyRL-SQL (skyrl-gym 0.4.0's ``text2sql``): -1 when the final answer breaks the format (the
    environment's verdict over the whole episode under the ``skyrl`` protocol, or no answer at all),
    1 when it matches, else 0."""
    turn = _final(trajectory)
    value = -1.0 if turn is None or not turn.format_ok else 1.0 if turn.match else 0.0
    return _breakdown("skyrl-sql-v1", (("outcome", value),))


def arctic(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    """Arctic-Text2SQL-R1: 1 if the result matches, else 0.1 if the SQL executes, else 0."""
    turn = _final(trajectory)
    value = 0.0 if turn is None else 1.0 if turn.match else 0.1 if turn.executable else 0.0
    return _breakdown("arctic-v1", (("outcome", value),))


def sql_r1(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    """SQL-R1: format +-1, execution +-2, result +-3 and a length bonus of at most 1.5 on a match.

    The result term is only +3 when the environment found a match against a gold result that
    exists: SQL-R1's own code returns a match when the gold query fails, which we do not copy. The
    length bonus follows the paper's description: half of the response's share of the budget plus
    the SQL's share of the response, each capped at 1.
    """
    turn = _final(trajectory)
    if turn is None:
        return _breakdown("sql-r1-v1", (("fmt", -1.0), ("exec", -2.0), ("result", -3.0), ("length", 0.0)))
    length = 0.0
    if turn.match:
        total = len(turn.response)
        sql_chars = len(turn.sql or "")
        length = 0.5 * min(1.0, total / max(1, context.max_response_chars)) + min(1.0, sql_chars / max(1, total))
    return _breakdown(
        "sql-r1-v1",
        (
            ("fmt", 1.0 if turn.format_ok else -1.0),
            ("exec", 2.0 if turn.executable else -2.0),
            ("result", 3.0 if turn.match else -3.0),
            ("length", length),
        ),
    )


def schema_items(sql: str) -> frozenset[str]:
    """Lower-cased table names and ``column`` names a query mentions (empty if it does not parse)."""
    tree = parse_sql(sql)
    if isinstance(tree, ParseFailure):
        return frozenset()
    tables = {f"table:{t.name.lower()}" for t in tree.find_all(exp.Table) if t.name}
    columns = {f"column:{c.name.lower()}" for c in tree.find_all(exp.Column) if c.name}
    return frozenset(tables | columns)


#: Weights of the Reasoning-SQL-style partial reward (its paper's LLM-judge term is left out).
PARTIAL_WEIGHTS = {"exec": 1.0, "schema": 0.3, "ngram": 0.3, "syntax": 0.2, "fmt": 0.2}


def reasoning_sql(trajectory: Trajectory, context: RewardContext) -> RewardBreakdown:
    """Reasoning-SQL-style partial rewards: execution match, schema-linking Jaccard over tables and
    columns, 2-gram similarity, syntax validity and format, weighted by :data:`PARTIAL_WEIGHTS`."""
    turn = _final(trajectory)
    sql = turn.sql if turn is not None and turn.sql else ""
    parsed = bool(sql) and not isinstance(parse_sql(sql), ParseFailure)
    scores = {
        "exec": float(turn is not None and turn.match),
        "schema": jaccard(schema_items(sql), schema_items(context.gold_sql)) if parsed else 0.0,
        "ngram": lexical_similarity(sql, context.gold_sql) if sql else 0.0,
        "syntax": float(parsed),
        "fmt": float(turn is not None and turn.format_ok),
    }
    return _breakdown("reasoning-sql-v1", tuple((k, PARTIAL_WEIGHTS[k] * v) for k, v in scores.items()))
