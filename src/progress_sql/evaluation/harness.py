"""The evaluation harness: pure orchestration over a :class:`~progress_sql.judge.gold.GoldStore`
(run, judge, vote, diagnose, judge on the suite); files and the terminal are the command line's job."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Literal

from progress_sql.data.loaders import database_problem
from progress_sql.evaluation.bird import soft_f1
from progress_sql.evaluation.voting import is_valid, majority_vote
from progress_sql.judge.gold import GoldStore, PreparedGold
from progress_sql.judge.kinds import kind_rules
from progress_sql.odt.records import Diagnosis
from progress_sql.odt.tags import Finding
from progress_sql.types import Example, ExecResult, Hardness, ResultPreview, result_previews

Progress = Callable[[int], None]  # advance by n finished executions


RecordStatus = Literal["scored", "skipped", "gold_invalid"]
Breakdown = Literal["hardness", "difficulty"]


@dataclass(frozen=True, slots=True)
class Sample:
    """One generated answer: its SQL (None when none could be extracted) and, for model text, the
    raw response and whether it followed the output format (None for prediction files)."""

    sql: str | None
    text: str | None = None
    format_ok: bool | None = None


@dataclass(frozen=True, slots=True)
class EvalRecord:
    """One example's evaluation, as written to samples.jsonl.

    ``sql`` / ``verdict`` / ``match`` belong to the answer: the only sample, or the majority vote's
    choice. ``ts_match`` is None without a suite for the example's database. ``votes`` are the sizes
    of the result groups in order of first appearance; ``vote_share`` the winner's share.
    ``soft_f1`` (BIRD metrics asked for) is Mini-Dev's Soft-F1 of the answer (0 when it or the gold
    failed; None when not asked for, or a result was truncated); ``ves_reward`` and ``ves_ratio`` are
    its R-VES reward and mean time ratio (None unless R-VES was measured). ``findings`` are the ODT
    tags of the answer with where in the query each was found (``tags`` their codes).
    ``gold_result`` / ``pred_result`` keep the first rows of the gold's and the answer's results as
    they were judged (only when :func:`evaluate` is asked for ``preview_rows``; None otherwise or when
    the answer was not run).
    """

    index: int
    db_id: str
    status: RecordStatus
    reason: str
    difficulty: str | None
    hardness: str | None
    level: str | None
    sql: str | None
    verdict: str
    match: bool
    ts_match: bool | None = None
    ts_databases: int = 0
    samples: int = 0
    correct_samples: int = 0
    valid_samples: int = 0
    format_ok_samples: int | None = None
    first_match: bool = False
    chosen_sample: int | None = None
    votes: tuple[int, ...] = ()
    vote_share: float = 0.0
    tags: tuple[str, ...] = ()
    f_struct: float | None = None
    preset: str = ""
    soft_f1: float | None = None
    ves_reward: float | None = None
    ves_ratio: float | None = None
    #: The task kind (``read``, ``write``, ``ambiguous``): reports break results down by it.
    kind: str = "read"
    findings: tuple[Finding, ...] = ()
    gold_result: ResultPreview | None = None
    pred_result: ResultPreview | None = None


def evaluate(
    examples: Sequence[Example],
    samples: Sequence[Sequence[Sample]],
    store: GoldStore,
    *,
    breakdown: Breakdown = "hardness",
    progress: Progress | None = None,
    with_soft_f1: bool = False,
    preview_rows: int = 0,
) -> list[EvalRecord]:
    """Evaluate ``samples[i]`` (one or more answers) against ``examples[i]`` for every i, in order,
    under ``store``'s preset and limits.

    Every distinct (database, SQL) runs once. With several samples the answer is the majority vote
    by execution result (:func:`progress_sql.evaluation.voting.majority_vote`). The ODT analysis of
    the answer uses the store's gold reference, built with the database's schema like the feedback
    of the environment. With the store's suite lookup, an answer that matches on the original
    database is also run on every suite database of its gold; it counts for test-suite accuracy
    only if it matches on all of them (a suite database on which the gold fails is left out for
    that example). ``with_soft_f1`` adds each answer's Soft-F1 (BIRD Mini-Dev's metric).
    ``preview_rows`` > 0 keeps that many first rows of the gold's and the answer's results in each
    record (what the run explorer shows; nothing runs again for it).
    """
    if len(examples) != len(samples):
        raise ValueError(f"{len(samples)} sample lists for {len(examples)} examples")
    problems = {e.index: problem for e in examples if (problem := database_problem(e)) is not None}
    present = [(e, s) for e, s in zip(examples, samples, strict=True) if e.index not in problems]
    absent_levels = _levels_beside([e for e in examples if e.index in problems], store)
    for example, items in present:
        if not items:
            raise ValueError(f"example {example.index} has no samples")
    for example, _ in present:
        store.schema(example.db_path)  # an unreadable database fails here, before anything runs
    answers = [(e, s.sql) for e, items in present for s in items if s.sql is not None]
    # The answers' queries share the pool with the golds' from the start; the ODT analysis runs in
    # the store's analysis processes (when it has them) meanwhile.
    with ThreadPoolExecutor(1, thread_name_prefix="answers") as background:
        answers_run = background.submit(store.run_answers, answers, progress)
        golds = store.prepare_many([e for e, _ in present], progress)
        early = _diagnose_beside(present, golds, store)
        ran = iter(answers_run.result())

    records: dict[int, EvalRecord] = {}
    pending_ts: list[tuple[Example, str]] = []  # matches to judge on the suite: (example, the chosen answer's SQL)
    diagnosed = early()
    for (example, items), gold in zip(present, golds, strict=True):
        results = [None if s.sql is None else next(ran) for s in items]
        diagnosis = diagnosed.get(example.index)
        record = _judge_example(example, items, results, gold, store, breakdown, diagnosis, preview_rows)
        if with_soft_f1:
            record = replace(record, soft_f1=_soft_f1(record, results, gold))
        record, needs_suite = _plan_suite(record, example, store)
        records[example.index] = record
        if needs_suite:
            assert record.sql is not None  # a match has a chosen answer with SQL
            pending_ts.append((example, record.sql))
    for (example, _), suite in zip(pending_ts, store.suite_verdicts(pending_ts, progress), strict=True):
        assert suite is not None  # planned only for examples with suite databases
        records[example.index] = replace(records[example.index], ts_match=suite.match, ts_databases=suite.databases)
    levels = absent_levels()
    return [records.get(e.index) or _skipped(e, levels[e.index], store, breakdown, problems[e.index]) for e in examples]


def _diagnose_beside(
    present: Sequence[tuple[Example, Sequence[Sample]]], golds: Sequence[PreparedGold], store: GoldStore
) -> Callable[[], dict[int, Diagnosis]]:
    """With the store's analysis processes, the diagnoses of the answers that need no result to be
    chosen (the only sample of their example), computed there while the caller runs the queries;
    by example index. Without them, none (each answer is diagnosed when it is judged). An answer
    repeated against the same gold (paraphrased questions: a fifth of Spider dev's pairs for a
    published system) is diagnosed once, as the store keeps its own diagnoses."""
    if store.analysis is None:
        return dict
    chosen = [
        (example.index, (items[0].sql or "", gold.reference))
        for (example, items), gold in zip(present, golds, strict=True)
        if len(items) == 1 and gold.error is None
    ]
    # by the answer and its reference object: one object per prepared gold, so the same inputs
    distinct = list({(sql, id(reference)): (sql, reference) for _, (sql, reference) in chosen}.values())
    later = store.analysis.diagnoses(distinct, store.odt)

    def collect() -> dict[int, Diagnosis]:
        made = {(sql, id(reference)): diagnosis for (sql, reference), diagnosis in zip(distinct, later(), strict=True)}
        return {index: made[sql, id(reference)] for index, (sql, reference) in chosen}

    return collect


def _levels_beside(absent: Sequence[Example], store: GoldStore) -> Callable[[], dict[int, Hardness | None]]:
    """The hardness of the golds of examples whose database is absent (skipped), by example index: in
    the store's analysis processes while the caller goes on, else in the caller when asked."""
    golds = [e.gold_sql for e in absent]
    if store.analysis is not None and golds:
        later = store.analysis.levels(golds)
    else:

        def later() -> list[Hardness | None]:
            from progress_sql.sql.hardness import hardness

            return [hardness(sql) for sql in golds]

    return lambda: {e.index: level for e, level in zip(absent, later(), strict=True)}


def _identity(example: Example, level: Hardness | None, store: GoldStore, breakdown: Breakdown) -> dict[str, Any]:
    """The fields of an example's record that do not depend on its answers."""
    return {
        "index": example.index, "db_id": example.db_id, "difficulty": example.difficulty, "hardness": level,
        "level": level if breakdown == "hardness" else example.difficulty, "preset": store.preset.name,
    }  # fmt: skip


def _skipped(
    example: Example, level: Hardness | None, store: GoldStore, breakdown: Breakdown, reason: str
) -> EvalRecord:
    """The record of an example whose database cannot be used (``reason``: :func:`database_problem`'s)."""
    return EvalRecord(**_identity(example, level, store, breakdown), status="skipped", reason=reason, sql=None,
                      verdict="skipped", match=False)  # fmt: skip


def _judge_example(
    example: Example,
    items: Sequence[Sample],
    results: Sequence[ExecResult | None],
    gold: PreparedGold,
    store: GoldStore,
    breakdown: Breakdown,
    diagnosis: Diagnosis | None = None,
    preview_rows: int = 0,
) -> EvalRecord:
    """One present example: its answer (the only sample or the vote's choice), judged and diagnosed
    (``diagnosis``: the answer's, computed already), with ``preview_rows`` first rows of the results
    it was judged on (the answer's: the chosen sample's). Built in one go: a record is made 2,000 times
    a run, and each copy of a 30-field record costs more than its judging."""
    formats = [s.format_ok for s in items]
    fields = _identity(example, gold.hardness, store, breakdown)
    format_count = None if any(f is None for f in formats) else sum(bool(f) for f in formats)
    fields.update(samples=len(items), kind=example.kind, format_ok_samples=format_count)
    if gold.error is not None:
        fields["gold_result"], fields["pred_result"] = result_previews(
            gold.results, results[0] if results else None, preview_rows
        )
        reason = store.judgement(example, gold.results, ExecResult("error")).verdict.reason
        return EvalRecord(**fields, status="gold_invalid", reason=reason, sql=items[0].sql, verdict="gold_invalid",
                          match=False)  # fmt: skip
    verdicts = [None if r is None else store.judgement(example, gold.results, r).verdict for r in results]
    # A write's result is its checks: vote by which checks passed (the first sample among equals).
    vote = majority_vote(example.gold_sql, kind_rules(example).vote_results(results, verdicts), store.preset)
    chosen = vote.chosen if vote.chosen is not None else 0
    if diagnosis is None:  # not diagnosed in the analysis processes (a vote, or none): the parser loads here
        diagnosis = store.diagnosis(example, items[chosen].sql or "", gold)
    verdict = verdicts[chosen]
    answer = results[chosen] if chosen < len(results) else None
    fields["gold_result"], fields["pred_result"] = result_previews(gold.results, answer, preview_rows)
    return EvalRecord(
        **fields,
        status="scored",
        reason=verdict.reason if verdict else "no SQL found in the response",
        sql=items[chosen].sql,
        verdict=verdict.status if verdict else "no_sql",
        match=bool(verdict and verdict.match),
        chosen_sample=vote.chosen,
        votes=vote.sizes,
        vote_share=vote.share,
        correct_samples=sum(bool(v and v.match) for v in verdicts),
        valid_samples=sum(is_valid(r) for r in results),
        first_match=bool(verdicts[0] and verdicts[0].match),
        tags=diagnosis.tags,
        findings=diagnosis.findings,
        f_struct=round(diagnosis.f_struct, 6),
    )


def _soft_f1(record: EvalRecord, results: Sequence[ExecResult | None], gold: PreparedGold) -> float | None:
    """The answer's Soft-F1; BIRD scores an answer or a gold that fails (error, timeout) as 0."""
    if record.status == "gold_invalid" and gold.results[0].status == "ok" and gold.results[0].truncated:
        return None
    answer = None if record.chosen_sample is None else results[record.chosen_sample]
    if record.status != "scored" or answer is None or answer.status != "ok":
        return 0.0
    if answer.truncated:
        return None  # only a prefix of the rows came back: the score cannot be BIRD's
    return soft_f1(answer.rows, gold.results[0].rows)


def _plan_suite(record: EvalRecord, example: Example, store: GoldStore) -> tuple[EvalRecord, bool]:
    """Whether a scored answer needs its suite runs, or its test-suite verdict when it needs none."""
    if record.status != "scored":
        return record, False
    databases = store.suite_databases(example)
    if databases is None:  # no suite, or none for this database: no test-suite verdict
        return record, False
    if record.match and databases:
        return record, True
    # A mismatch stays one; a suite with no file for this gold is the original database alone.
    return replace(record, ts_match=record.match, ts_databases=len(databases)), False
