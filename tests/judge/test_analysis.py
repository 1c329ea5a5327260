"""ODT analysis in processes (judge/analysis.py): the same references and diagnoses as the caller
computes, nothing lost when a process dies, and ``evaluate`` with analysis processes writes the same
records as without them."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from progress_sql.data.schema import Schema, read_schema
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.analysis import AnalysisPool, prepare_reference
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.odt import OdtConfig, diagnose
from progress_sql.types import Example
from tests.conftest import build_database

GOLDS = (
    "SELECT supplier_name FROM suppliers JOIN contact_lenses ON suppliers.supplier_id = contact_lenses.supplier_id "
    "WHERE price > 20",
    "SELECT count(*) FROM contact_lenses",
    "SELECT supplier_id, avg(price) FROM contact_lenses GROUP BY supplier_id HAVING count(*) > 1 ORDER BY 1",
    "SELECT * FROM no_such_table",
    "SELEC broken",
)
ANSWERS = (
    GOLDS[0].replace("> 20", "> 40"),
    "SELECT count(*) FROM suppliers",
    "SELECT supplier_id FROM contact_lenses",
    "not sql at all",
    "",
    GOLDS[2],
)


@pytest.fixture(scope="module")
def lenses_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_database("contact_lenses.sql", tmp_path_factory.mktemp("analysis"))


@pytest.fixture(scope="module")
def analysis() -> Iterator[AnalysisPool]:
    with AnalysisPool(2) as pool:
        yield pool


def test_the_processes_give_what_the_caller_computes(lenses_db: Path, analysis: AnalysisPool) -> None:
    schema = read_schema(str(lenses_db))
    config = OdtConfig()
    golds = [(sql, schema) for sql in GOLDS] * 30  # several chunks
    local = [prepare_reference(sql, schema, config) for sql, schema in golds]
    remote = analysis.references(golds, config)()
    assert remote == local
    answers = [(answer, reference) for answer in ANSWERS for reference, _ in local[: len(GOLDS)]] * 3
    assert analysis.diagnoses(answers, config)() == [diagnose(sql, ref, config=config) for sql, ref in answers]


def test_a_dead_process_loses_nothing(lenses_db: Path) -> None:
    schema = read_schema(str(lenses_db))
    config = OdtConfig()
    golds = [(sql, schema) for sql in GOLDS] * 20
    expected = [prepare_reference(sql, schema, config) for sql, schema in golds]
    with AnalysisPool(2) as pool:
        assert pool.references(golds, config)() == expected  # the processes run now
        for pid in list(pool._executor._processes):  # killed from outside
            os.kill(pid, signal.SIGKILL)
        assert pool.references(golds, config)() == expected  # computed in the caller instead


def test_evaluate_writes_the_same_records_with_analysis_processes(
    lenses_db: Path, pool: ExecutionPool, analysis: AnalysisPool, tmp_path: Path
) -> None:
    examples = [Example(i, "?", "contact_lenses", str(lenses_db), gold) for i, gold in enumerate(GOLDS)]
    examples.append(Example(len(GOLDS), "?", "nowhere", str(tmp_path / "nowhere.sqlite"), GOLDS[1]))
    samples = [
        [Sample(ANSWERS[0])],
        [Sample(None)],
        [Sample(ANSWERS[2]), Sample(GOLDS[2]), Sample(GOLDS[2])],  # a vote: diagnosed after the queries
        [Sample(ANSWERS[3])],
        [Sample(GOLDS[4])],
        [Sample(ANSWERS[1])],
    ]
    without = evaluate(examples, samples, GoldStore(get_preset("spider"), pool=pool), preview_rows=3)
    store = GoldStore(get_preset("spider"), pool=pool, analysis=analysis)
    with_processes = evaluate(examples, samples, store, preview_rows=3)
    assert with_processes == without
    assert [r.status for r in without] == ["scored", "scored", "scored", "gold_invalid", "gold_invalid", "skipped"]
    assert without[0].f_struct is not None
    assert without[2].match
    fresh = GoldStore(get_preset("spider"), pool=pool)
    assert store.prepare(examples[0]).reference == fresh.prepare(examples[0]).reference


def test_an_answer_repeated_against_the_same_gold_is_diagnosed_once(
    lenses_db: Path, pool: ExecutionPool, analysis: AnalysisPool
) -> None:
    """Paraphrased questions share a gold and often an answer: ``evaluate`` sends each distinct
    (answer, gold) pair to the processes once and gives every example its diagnosis."""
    golds = [GOLDS[0], GOLDS[0], GOLDS[0], GOLDS[1], GOLDS[1]]
    answers = [ANSWERS[0], ANSWERS[0], GOLDS[0], ANSWERS[1], ANSWERS[1]]
    examples = [Example(i, "?", "contact_lenses", str(lenses_db), gold) for i, gold in enumerate(golds)]
    samples = [[Sample(answer)] for answer in answers]
    sent: list[tuple[str, Any]] = []

    class Counting(AnalysisPool):
        def diagnoses(self, pairs: Sequence[tuple[str, Any]], config: OdtConfig) -> Any:
            sent.extend(pairs)
            return super().diagnoses(pairs, config)

    with Counting(1) as counting:
        records = evaluate(examples, samples, GoldStore(get_preset("spider"), pool=pool, analysis=counting))
    assert sorted(sql for sql, _ in sent) == sorted([ANSWERS[0], GOLDS[0], ANSWERS[1]])
    without = evaluate(examples, samples, GoldStore(get_preset("spider"), pool=pool))
    assert records == without
    assert records[0].f_struct is not None
    assert records[3].tags == records[4].tags != ()


def test_references_built_in_the_processes_fill_the_cache_directory(
    lenses_db: Path, pool: ExecutionPool, analysis: AnalysisPool, tmp_path: Path
) -> None:
    """With ``eval --cache-dir``, references built in the analysis processes are kept on disk, and a
    later store reads them instead of building them again (in the processes or here)."""
    examples = [Example(i, "?", "contact_lenses", str(lenses_db), gold) for i, gold in enumerate(GOLDS[:3])]
    first = GoldStore(get_preset("spider"), pool=pool, cache=GoldCache(tmp_path), analysis=analysis)
    built = first.prepare_many(examples)
    assert len(list((tmp_path / "references").rglob("*.pickle"))) == 3

    class Refusing(AnalysisPool):
        def references(self, golds: Sequence[tuple[str, Schema | None]], config: OdtConfig) -> Any:
            assert not golds, "a stored reference was built again"
            return super().references(golds, config)

    with Refusing(1) as refusing:
        later = GoldStore(get_preset("spider"), pool=pool, cache=GoldCache(tmp_path), analysis=refusing)
        again = later.prepare_many(examples)
    assert [g.reference for g in again] == [g.reference for g in built]
    assert [g.hardness for g in again] == [g.hardness for g in built]


def test_a_reference_crosses_a_process_with_its_tree_packed(lenses_db: Path) -> None:
    """A reference that passes through a process (eval's parent, on its way from the analysis process
    that built it to the one that diagnoses an answer) keeps its tree as bytes until it is read."""
    reference, _ = prepare_reference(GOLDS[0], read_schema(str(lenses_db)), OdtConfig())
    carried = pickle.loads(pickle.dumps(reference))
    assert isinstance(carried.packed_tree, bytes)
    assert pickle.loads(pickle.dumps(carried)).packed_tree == carried.packed_tree  # passed on as it came
    assert carried == reference
    assert hash(carried) == hash(reference)
    assert carried.tree == reference.tree
    assert not isinstance(carried.packed_tree, bytes)  # unpacked once
    assert diagnose(ANSWERS[0], carried) == diagnose(ANSWERS[0], reference)
    failed, _ = prepare_reference(GOLDS[4], None, OdtConfig())  # a gold that does not parse travels too
    assert pickle.loads(pickle.dumps(failed)).tree == failed.tree


EVAL_PARENT = """
import sys

from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.judge.analysis import AnalysisPool
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.execution.pool import ExecutionPool
from progress_sql.types import Example

if __name__ == "__main__":
    import progress_sql.cli.eval  # the command's own imports

    golds, answers, db, absent = {golds!r}, {answers!r}, {db!r}, {absent!r}
    examples = [Example(i, "?", "lenses", db, gold) for i, gold in enumerate(golds)]
    examples.append(Example(len(golds), "?", "nowhere", absent, golds[1]))  # skipped: its hardness is computed
    with ExecutionPool(workers=2) as pool, AnalysisPool(2) as analysis:
        store = GoldStore(get_preset("spider"), pool=pool, analysis=analysis)
        records = evaluate(examples, [[Sample(a)] for a in answers] + [[Sample(golds[1])]], store)
    assert [r.status for r in records][-1] == "skipped" and records[-1].hardness == "easy", records[-1]
    assert any(r.tags for r in records) and all(r.f_struct is not None for r in records[:3]), records
    from progress_sql.view import write_run_page  # the page eval writes last reads the folder, parses nothing
    print("sqlglot" in sys.modules)
"""


def test_the_eval_parent_never_imports_the_parser(lenses_db: Path, tmp_path: Path) -> None:
    """eval's process leaves parsing to the analysis processes: importing the command, evaluating
    single answers (diagnosed there, with a skipped example's hardness) and the page's writer load no
    sqlglot."""
    script = tmp_path / "parent.py"
    answers = list(ANSWERS[: len(GOLDS)])
    script.write_text(
        EVAL_PARENT.format(golds=GOLDS, answers=answers, db=str(lenses_db), absent=str(tmp_path / "absent.sqlite"))
    )
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == "False"
