"""The task-kind registry of judging: every kind has its rule, and the rules do what the gold store
and the harness relied on when they branched on the kind themselves."""

from __future__ import annotations

from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.write import write_job
from progress_sql.judge.compare import get_preset
from progress_sql.judge.kinds import KIND_RULES, QueryRule, ScriptRule, gold_problem, kind_rules
from progress_sql.types import TASK_KINDS, AmbiguitySlot, Example, ExecResult, Verdict, WriteCheck, WriteSpec

READ = Example(0, "How many?", "shop", "/db/shop.sqlite", "SELECT count(*) FROM t")


def test_every_task_kind_has_a_rule() -> None:
    assert set(KIND_RULES) == set(TASK_KINDS)
    assert isinstance(kind_rules(READ), QueryRule)
    ambiguous = Example(
        1,
        "The best?",
        "shop",
        "/db/shop.sqlite",
        "SELECT 1",
        ambiguity=(AmbiguitySlot("metric", "which one", "revenue", ("metric",)),),
    )
    assert ambiguous.kind == "ambiguous"
    assert kind_rules(ambiguous) == kind_rules(READ)


def test_a_query_runs_where_its_example_runs_and_a_script_on_a_copy() -> None:
    limits = ExecLimits(timeout_s=3.0)
    preset = get_preset("strict")
    job = kind_rules(READ).answer_job(READ, "SELECT 1", "postgresql://h/db", preset, limits)
    assert (job.db_path, job.limits) == ("postgresql://h/db", limits)
    spec = WriteSpec(tables=("t",), checks=(WriteCheck("rows", "SELECT count(*) FROM t", ((1,),)),))
    write = Example(2, "Add one.", "shop", "/db/shop.sqlite", "INSERT INTO t VALUES (1)", write=spec)
    rule = kind_rules(write)
    assert isinstance(rule, ScriptRule)
    assert rule.scripted
    assert not rule.suite
    assert rule.answer_job(write, "DELETE FROM t", "ignored", preset, limits) == write_job(
        write.db_path, "DELETE FROM t", spec, limits
    )


def test_votes_compare_results_for_queries_and_passed_checks_for_scripts() -> None:
    results = [ExecResult("ok", ("a",), ((1,),)), None]
    verdicts = [Verdict(True, "match", "2 of 2 checks", "strict"), None]
    assert QueryRule().vote_results(results, verdicts) == results
    stand_ins = ScriptRule().vote_results(results, verdicts)
    assert stand_ins[1] is None
    assert stand_ins[0] == ExecResult("ok", ("checks",), (("2 of 2 checks",),))


def test_a_query_gold_that_fails_or_is_cut_cannot_be_judged_against() -> None:
    assert gold_problem([ExecResult("ok", ("a",), ((1,),))]) is None
    assert gold_problem([ExecResult("timeout", error="too slow")]) == "the gold query timeout: too slow"
    assert gold_problem([ExecResult("ok", ("a",), ((1,),), truncated=True)]) == "the gold query exceeds the row cap"
