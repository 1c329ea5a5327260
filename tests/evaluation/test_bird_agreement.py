"""BIRD's metrics against BIRD's own evaluation code (Mini-Dev's scripts, vendored unchanged in
tests/fixtures/bird_eval/) on the superhero questions of BIRD dev and Mini-Dev (../shared/data):
EX and Soft-F1 identical per question and per difficulty, R-VES identical given the same timings,
and BIRD's reader reads our BIRD JSON files as we do. The live-timing tolerance of R-VES is
documented in docs/evaluation.md#bird-metrics (timings are not asserted here)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from progress_sql.data.loaders import load_bird
from progress_sql.evaluation.harness import EvalRecord, Sample, evaluate
from progress_sql.evaluation.metrics import bird_metrics
from progress_sql.evaluation.predictions import read_predictions, write_predictions
from progress_sql.evaluation.ves import Timing, time_answers, ves_of
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.types import Example
from tests.evaluation.bird_reference import bird_db_path, load_bird_scripts

pytestmark = [pytest.mark.shared_data]

LIMITS = ExecLimits(timeout_s=30.0)  # BIRD's meta_time_out
QUESTION_FILES = {"bird-dev": "dev.json", "mini-dev": "mini_dev/mini_dev_sqlite.json"}


@pytest.fixture(scope="module")
def bird() -> dict[str, ModuleType]:
    return load_bird_scripts()


def superhero(shared_data: Path, name: str) -> list[Example]:
    root = shared_data / "bird"
    examples = [e for e in load_bird(root / QUESTION_FILES[name], root / "dev_databases") if e.db_id == "superhero"]
    assert len(examples) == {"bird-dev": 129, "mini-dev": 52}[name]
    return examples


# --- prediction sets ----------------------------------------------------------------------------------


def gold(examples: list[Example]) -> list[str]:
    return [e.gold_sql for e in examples]


def column_dropped(examples: list[Example]) -> list[str]:
    """The gold without its last selected column (a single-column gold gets its column twice)."""
    out = []
    for e in examples:
        tree = sqlglot.parse_one(e.gold_sql, dialect="sqlite")
        select = tree if isinstance(tree, exp.Select) else None
        if select is None:
            out.append(e.gold_sql)
            continue
        columns = list(select.expressions)
        select.set("expressions", columns[:-1] if len(columns) > 1 else [columns[0], columns[0].copy()])
        out.append(select.sql(dialect="sqlite"))
    return out


def neighbours_gold(examples: list[Example]) -> list[str]:
    """The next question's gold: wrong answers that share values with the right one (Soft-F1 between 0 and 1)."""
    return [examples[(i + 1) % len(examples)].gold_sql for i in range(len(examples))]


def reordered(examples: list[Example]) -> list[str]:
    """The gold's rows in another order: the same set (EX 1), and Soft-F1 pairs rows by position."""
    return [f"SELECT * FROM ({e.gold_sql}) ORDER BY 1 DESC" for e in examples]


PREDICTION_SETS: dict[str, Callable[[list[Example]], list[str]]] = {
    "gold": gold,
    "column dropped": column_dropped,
    "neighbour's gold": neighbours_gold,
    "rows reordered": reordered,
}


def ours(examples: list[Example], predictions: list[str], pool: ExecutionPool) -> list[EvalRecord]:
    store = GoldStore(get_preset("bird"), pool=pool, limits=LIMITS)
    return evaluate(examples, [[Sample(sql)] for sql in predictions], store, breakdown="difficulty", with_soft_f1=True)


def theirs(bird: dict[str, ModuleType], examples: list[Example], predictions: list[str]) -> Iterator[tuple[int, float]]:
    """(EX, Soft-F1) of each question from BIRD's ``execute_model`` (errors and timeouts score 0)."""
    for i, (e, pred) in enumerate(zip(examples, predictions, strict=True)):
        ex = bird["evaluation_ex"].execute_model(pred, e.gold_sql, e.db_path, i, 30.0, "SQLite")
        f1 = bird["evaluation_f1"].execute_model(pred, e.gold_sql, e.db_path, i, 30.0, "SQLite")
        yield ex["res"], f1["res"]


def difficulty_file(tmp_path: Path, examples: list[Example]) -> str:
    path = tmp_path / "diff.jsonl"
    path.write_text("".join(json.dumps({"difficulty": e.difficulty}) + "\n" for e in examples))
    return str(path)


@pytest.mark.parametrize("dataset", list(QUESTION_FILES))
@pytest.mark.parametrize("prediction_set", list(PREDICTION_SETS))
def test_ex_and_soft_f1_agree_per_question_and_per_difficulty(
    shared_data: Path,
    pool: ExecutionPool,
    bird: dict[str, ModuleType],
    tmp_path: Path,
    dataset: str,
    prediction_set: str,
) -> None:
    examples = superhero(shared_data, dataset)
    predictions = PREDICTION_SETS[prediction_set](examples)
    records = ours(examples, predictions, pool)
    reference = list(theirs(bird, examples, predictions))
    assert [(int(r.match), r.soft_f1) for r in records] == reference
    if prediction_set == "gold":
        assert all(ex == 1 and f1 == 1.0 for ex, f1 in reference)
    elif prediction_set == "rows reordered":  # the same sets of rows, paired by position for Soft-F1
        assert sum(ex for ex, _ in reference) > 0.9 * len(examples)  # a LIMIT without ORDER BY may pick others
        assert any(ex == 1 and f1 < 1 for ex, f1 in reference)
    else:  # wrong answers, some of them partly right
        assert sum(ex for ex, _ in reference) < len(examples)
        assert any(0 < f1 < 1 for _, f1 in reference)
    # BIRD's per-difficulty averages over the same per-question results (its numbers are percentages).
    mine = bird_metrics(records)
    diff = difficulty_file(tmp_path, examples)
    for metric, module, compute in (
        ("ex", "evaluation_ex", "compute_acc_by_diff"),
        ("soft_f1", "evaluation_f1", "compute_f1_by_diff"),
    ):
        results = [{"sql_idx": i, "res": pair[metric == "soft_f1"]} for i, pair in enumerate(reference)]
        *scores, counts = getattr(bird[module], compute)(results, diff)
        levels = ("simple", "moderate", "challenging", "total")
        assert [mine["count"][level] for level in levels] == counts
        assert [100 * mine[metric][level] for level in levels] == pytest.approx(scores, abs=1e-9)


def birds_reward(
    bird: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch, example: Example, pred: str, timing: Timing | None
) -> float:
    """BIRD's ``execute_model`` for R-VES (outliers, mean ratio, reward buckets, errors as 0), its
    clock replaced by ``timing``'s measurements in the order it reads them (prediction, gold, ...)."""
    ves = bird["evaluation_ves"]
    real_execute_sql = ves.execute_sql
    scripted = [] if timing is None else [t for pair in zip(timing.pred_s, timing.gold_s, strict=True) for t in pair]
    clock = iter(scripted)

    def execute_sql(sql: str, db_path: str, dialect: str, return_time: bool = False) -> Any:
        return next(clock) if return_time else real_execute_sql(sql, db_path, dialect)

    monkeypatch.setattr(ves, "execute_sql", execute_sql)
    try:
        repeats = len(scripted) // 2 or 1
        reward: float = ves.execute_model(pred, example.gold_sql, example.db_path, 0, repeats, 30.0, "SQLite")["reward"]
    finally:
        monkeypatch.setattr(ves, "execute_sql", real_execute_sql)
    assert next(clock, None) is None  # BIRD read every timing
    return reward


def test_r_ves_agrees_with_birds_protocol_given_the_same_timings(
    shared_data: Path, pool: ExecutionPool, bird: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timings measured here, fed to BIRD's R-VES code, give the reward computed here, for every
    question: wrong answers (never timed), right ones and right ones made slower."""
    examples = superhero(shared_data, "mini-dev")
    slow = "(SELECT count(*) FROM superhero AS a, superhero AS b) > 0"
    predictions = [
        e.gold_sql if i % 4 else f"SELECT * FROM ({e.gold_sql}) WHERE {slow}" for i, e in enumerate(examples)
    ]
    predictions[1] = "SELECT 'wrong'"
    records = ours(examples, predictions, pool)
    store = GoldStore(get_preset("bird"), pool=pool, limits=LIMITS)
    timings = time_answers(examples, records, store, repeats=3)
    assert timings[1] is None
    assert not records[1].match
    assert sum(t is not None for t in timings) >= len(examples) - 2
    rewards = [ves_of(timing)[0] for timing in timings]
    for example, pred, timing, reward in zip(examples, predictions, timings, rewards, strict=True):
        assert birds_reward(bird, monkeypatch, example, pred, timing) == reward, example.index
    total = bird["evaluation_ves"].compute_ves([{"reward": r} for r in rewards])
    measured = [replace(r, ves_reward=w) for r, w in zip(records, rewards, strict=True)]
    assert 100 * bird_metrics(measured)["r_ves"]["total"] == pytest.approx(total)


# (prediction seconds, gold seconds) per repeat: one case per reward bucket, an outlier, all equal.
SCRIPTED = {
    "ratio 3 (1.25)": ((0.01, 0.01, 0.01), (0.03, 0.03, 0.031)),
    "ratio 1.5 (1.0)": ((0.02, 0.02), (0.03, 0.0301)),
    "ratio 0.7 (0.75)": ((0.01, 0.011), (0.007, 0.0077)),
    "ratio 0.3 (0.5)": ((0.1, 0.1), (0.03, 0.0301)),
    "ratio 0.1 (0.25)": ((0.1, 0.1), (0.01, 0.0101)),
    "one outlier among 20": ((0.01,) * 20, (0.01,) * 19 + (1.0,)),
    "every ratio equal": ((0.01, 0.01), (0.02, 0.02)),
}


@pytest.mark.parametrize("case", list(SCRIPTED))
def test_r_ves_buckets_and_outliers_agree_on_scripted_timings(
    shared_data: Path, bird: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    example = superhero(shared_data, "mini-dev")[0]
    pred_s, gold_s = SCRIPTED[case]
    timing = Timing(pred_s, gold_s)
    reward, _ratio = ves_of(timing)
    assert reward == birds_reward(bird, monkeypatch, example, example.gold_sql, timing)
    if case == "every ratio equal":  # BIRD drops every value (none is strictly within 0 std) and scores 0
        assert reward == 0.0


def test_birds_reader_reads_our_bird_json_as_we_do(
    shared_data: Path, bird: dict[str, ModuleType], tmp_path: Path
) -> None:
    examples = superhero(shared_data, "bird-dev")
    predictions = column_dropped(examples)
    db_ids = [e.db_id for e in examples]
    path = write_predictions(tmp_path / "predict_dev.json", [[sql] for sql in predictions], db_ids, "bird-json")
    sqls, _ = bird["evaluation_utils"].package_sqls(str(path), str(shared_data / "bird" / "dev_databases") + "/")
    read = read_predictions(path, db_ids)
    assert read.format == "bird-json"
    assert read.first_samples() == sqls == predictions
    # And BIRD's gold file layout (SQL<TAB>db_id) is our tsv format.
    gold_sqls, paths = bird["evaluation_utils"].package_sqls(
        str(shared_data / "bird" / "dev_gold.sql"), str(shared_data / "bird" / "dev_databases") + "/", mode="gt"
    )
    all_examples = load_bird(shared_data / "bird" / "dev.json", shared_data / "bird" / "dev_databases")
    tsv = read_predictions(shared_data / "bird" / "dev_gold.sql", [e.db_id for e in all_examples])
    assert tsv.format == "tsv"
    assert tsv.first_samples() == gold_sqls
    assert paths[0] == bird_db_path(shared_data / "bird" / "dev_databases", all_examples[0].db_id)


def test_eval_reports_bird_metrics_and_compare_runs_shows_them(shared_data: Path, tmp_path: Path) -> None:
    """``eval`` on bird-dev: BIRD's metrics in summary.json (with the R-VES settings), report.md and
    the level plot; ``compare-runs`` puts them side by side."""
    from typer.testing import CliRunner

    from progress_sql.cli import app
    from tests.evaluation.test_plots import axes_hold_data

    runner = CliRunner()
    root = shared_data / "bird"
    examples = load_bird(root / "dev.json", root / "dev_databases")
    db_ids = [e.db_id for e in examples]
    dropped = {e.index: sql for e, sql in zip(superhero(shared_data, "bird-dev"), column_dropped(
        superhero(shared_data, "bird-dev")), strict=True)}  # fmt: skip
    files = {
        "gold": write_predictions(tmp_path / "gold.json", [[e.gold_sql] for e in examples], db_ids, "bird-json"),
        "dropped": write_predictions(
            tmp_path / "dropped.json", [[dropped.get(e.index, e.gold_sql)] for e in examples], db_ids, "bird-json"
        ),
    }
    summaries = {}
    for name, path in files.items():
        out = tmp_path / name
        args = ["eval", "--task", "bird-dev", "--data-dir", str(root), "--predictions", str(path), "--out", str(out),
                "--workers", "2", "--ves-repeats", "2", "--json"]  # fmt: skip
        result = runner.invoke(app, args + (["--no-plots"] if name == "dropped" else []))
        assert result.exit_code == 0, result.output
        summaries[name] = json.loads(result.stdout)
    gold_run = summaries["gold"]
    assert gold_run["settings"]["predictions_format"] == "bird-json"
    assert gold_run["settings"]["bird"] == {"ves_repeats": 2, "r_ves_machine_dependent": True}
    bird = gold_run["metrics"]["bird"]
    assert bird["count"] == {"simple": 81, "moderate": 33, "challenging": 15, "total": 129}
    assert bird["ex"] == {level: 1.0 for level in bird["count"]}
    assert bird["soft_f1"] == {level: 1.0 for level in bird["count"]}
    assert all(0.5 <= v <= 1.25**0.5 for v in bird["r_ves"].values())  # every answer right: reward >= 0.25
    dropped_bird = summaries["dropped"]["metrics"]["bird"]
    assert dropped_bird["ex"]["total"] == 0.0
    assert 0 < dropped_bird["soft_f1"]["total"] < 1
    report = (tmp_path / "gold" / "report.md").read_text()
    assert "## BIRD metrics" in report
    assert "| total | 129 | 100.00 | 100.00 |" in report
    assert "2 timing repeats per correct answer; it depends on the machine" in report
    assert axes_hold_data(tmp_path / "gold" / "accuracy_by_level.png")
    compared = runner.invoke(app, ["compare-runs", str(tmp_path / "gold"), str(tmp_path / "dropped"), "--json"])
    assert compared.exit_code == 0, compared.output
    headline = json.loads(compared.stdout)["headline"]
    assert headline["BIRD EX"] == {"a": 1.0, "b": 0.0, "delta": -1.0}
    assert headline["Soft-F1"]["b"] == pytest.approx(dropped_bird["soft_f1"]["total"])
    assert headline["R-VES"]["b"] == 0.0
    text = runner.invoke(app, ["compare-runs", str(tmp_path / "gold"), str(tmp_path / "dropped")])
    assert "Soft-F1" in text.stdout
