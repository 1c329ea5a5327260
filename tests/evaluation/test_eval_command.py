"""``progress-sql eval`` end to end on the shop fixture: EX and TS over a two-database suite,
Vote@N and pass@k from JSONL samples, the replay backend, reports and ``compare-runs``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.backends.base import GenerationConfig
from progress_sql.cli import app
from progress_sql.prompts import Message
from tests.conftest import build_database

runner = CliRunner()

QUESTIONS = [
    {"db_id": "shop", "question": "Which item is the most expensive?",
     "query": "SELECT name FROM item ORDER BY price DESC LIMIT 1"},
    {"db_id": "shop", "question": "Which items cost more than 5?", "query": "SELECT name FROM item WHERE price > 5"},
    {"db_id": "shop", "question": "How many items are there?", "query": "SELECT count(*) FROM item"},
    {"db_id": "shop", "question": "List all fruit.", "query": "SELECT name FROM item WHERE category = 'fruit'"},
    {"db_id": "shop", "question": "What does the memo say?", "query": "SELECT note FROM memo"},
    {"db_id": "gone", "question": "A question on a missing database.", "query": "SELECT 1"},
    {"db_id": "shop", "question": "A broken gold query.", "query": "SELECT price FROM nowhere"},
]  # fmt: skip
PREDICTIONS = [
    "SELECT 'pear'",  # right on the original only: a literal answer
    "SELECT name FROM item WHERE price >= 6",  # right on the original and suite A, wrong on suite B
    "SELECT count(*) FROM item",  # right everywhere
    "SELECT name FROM item",  # wrong
    "SELECT note FROM memo",  # right; suite A has no memo table (the gold fails there: left out)
    "SELECT 1",
    "SELECT 1",
]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """questions.json, database/shop/shop.sqlite and suite/shop/{a,b}.sqlite."""
    root = tmp_path_factory.mktemp("shop")
    build_database("shop.sql", root / "database")
    for name in ("a", "b"):
        built = build_database(f"shop_suite_{name}.sql", root / "build")
        target = root / "suite" / "shop" / f"{name}.sqlite"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(built, target)
    (root / "questions.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    return root


def run_eval(shop: Path, out: Path, *extra: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(
        app,
        ["eval", "--task", str(shop / "questions.json"), "--out", str(out), "--workers", "1", "--timeout", "5",
         "--json", *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary: dict = json.loads(result.stdout)  # type: ignore[type-arg]
    return summary


def samples_of(out: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def test_ex_and_ts_over_a_two_database_suite(shop: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "pred.txt"
    predictions.write_text("\n".join(PREDICTIONS) + "\n")
    summary = run_eval(shop, tmp_path / "out", "--predictions", str(predictions), "--suite", str(shop / "suite"))
    metrics = summary["metrics"]
    assert (metrics["scored"], metrics["matched"], metrics["skipped"], metrics["gold_invalid"]) == (5, 4, 1, 1)
    assert metrics["execution_accuracy"] == pytest.approx(0.8)
    assert metrics["ts_scored"] == 5
    assert metrics["test_suite_accuracy"] == pytest.approx(0.4)
    samples = samples_of(tmp_path / "out")
    assert [s["index"] for s in samples] == list(range(7))
    assert [s["match"] for s in samples] == [True, True, True, False, True, False, False]
    assert [s["ts_match"] for s in samples] == [False, False, True, False, True, None, None]
    assert [s["ts_databases"] for s in samples[:5]] == [2, 2, 2, 2, 1]
    assert [s["status"] for s in samples[5:]] == ["skipped", "gold_invalid"]
    assert samples[0]["hardness"] == "medium"
    assert samples[2]["hardness"] == "easy"
    assert summary["settings"]["suite"] == str(shop / "suite")
    assert metrics["skipped_examples"] == {
        "reason": "database file absent", "count": 1, "by_db_id": {"gone": 1},
        "by_reason": {"database file absent": {"gone": 1}}, "indices": [5],
    }  # fmt: skip
    assert metrics["gold_invalid_examples"][0]["index"] == 6
    report = (tmp_path / "out" / "report.md").read_text()
    assert "1 examples skipped, database file absent: `gone` (1)" in report
    assert "#6 (shop): gold query failed" in report
    assert "| TS (%), 5 examples with a suite | 40.00 |" in report


def test_summary_records_the_settings_that_decide_results(shop: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "pred.txt"
    predictions.write_text("\n".join(PREDICTIONS) + "\n")
    summary = run_eval(shop, tmp_path / "out", "--predictions", str(predictions), "--preset", "bird")
    assert summary["settings"]["preset"] == {"name": "bird", "options": {}}
    assert summary["settings"]["task"]["version"] == "1"
    assert summary["settings"]["decoding"] == {"mode": "prediction file", "n": 1}
    assert set(summary["versions"]) >= {"progress_sql", "sqlglot", "sqlite"}
    assert summary["odt_config_version"]
    assert summary["reward_config"]["version"] == "progressive-v2"
    assert summary["metrics"]["test_suite_accuracy"] is None
    assert set(summary["metrics"]["by_level"]) <= {"easy", "medium", "hard", "extra"}
    assert summary["metrics"]["odt"]["examples"] == 5


def test_vote_and_pass_at_k_from_jsonl_samples(shop: Path, tmp_path: Path) -> None:
    gold = [q["query"] for q in QUESTIONS]
    lists = [
        ["SELECT 'kiwi'", gold[0], gold[0], "SELECT 'kiwi'"],  # tie 2-2: the earliest group (wrong) wins
        ["SELECT nothing", "SELECT broken(", "SELECT nothing", "SELECT 1 +"],  # all invalid: no answer
        ["SELECT 1", gold[2], gold[2], "SELECT 7"],  # majority right
        [gold[3], "SELECT name FROM item", "SELECT name FROM item", "SELECT name FROM item"],  # majority wrong
        [gold[4]] * 4,
        ["SELECT 1"] * 4,
        ["SELECT 1"] * 4,
    ]
    predictions = tmp_path / "samples.jsonl"
    predictions.write_text("\n".join(json.dumps({"index": i, "samples": s}) for i, s in enumerate(lists)) + "\n")
    summary = run_eval(shop, tmp_path / "out", "--predictions", str(predictions))
    metrics = summary["metrics"]
    assert summary["settings"]["decoding"]["n"] == 4
    assert metrics["matched"] == 2  # examples 2 and 4
    assert metrics["first_sample_accuracy"] == pytest.approx(2 / 5)  # examples 3 and 4
    # correct samples per scored example: 2, 0, 2, 1, 4 -> pass@1 = mean(c / 4)
    assert metrics["pass_at_k"]["1"] == pytest.approx((2 + 0 + 2 + 1 + 4) / 20)
    assert metrics["pass_at_k"]["4"] == pytest.approx(4 / 5)
    assert metrics["pass_at_k"]["2"] == pytest.approx((5 / 6 + 0 + 5 / 6 + 1 / 2 + 1) / 5)
    samples = samples_of(tmp_path / "out")
    assert samples[0]["votes"] == [2, 2]
    assert samples[0]["chosen_sample"] == 0
    assert not samples[0]["match"]
    assert samples[1]["votes"] == []
    assert samples[1]["chosen_sample"] is None
    assert samples[1]["verdict"] == "pred_error"
    assert samples[2]["chosen_sample"] == 1
    assert samples[2]["vote_share"] == 0.5
    assert samples[3]["votes"] == [1, 3]
    assert not samples[3]["match"]
    assert metrics["vote"]["no_valid_sample"] == 1
    assert metrics["sample_valid_rate"] == pytest.approx(16 / 20)


def test_replay_backend_with_sampling(shop: Path, tmp_path: Path) -> None:
    def answer(sql: str) -> str:
        return f"<think>plan</think><sql>{sql}</sql>"

    script = [
        {"key": QUESTIONS[2]["question"], "responses": [answer("SELECT 4"), answer("SELECT count(*) FROM item"),
                                                        answer("SELECT count(*) FROM item")]},
        {"key": QUESTIONS[0]["question"], "responses": ["no tags at all", answer("SELECT 'pear'"),
                                                        answer("SELECT 'pear'")]},
    ]  # fmt: skip
    replay = tmp_path / "replay.jsonl"
    replay.write_text("\n".join(json.dumps(line) for line in script) + "\n")
    summary = run_eval(
        shop, tmp_path / "out", "--backend", "replay", "--replay", str(replay), "--n", "3", "--temperature", "0.8"
    )
    metrics = summary["metrics"]
    assert summary["settings"]["decoding"]["mode"] == "vote@3"
    assert metrics["matched"] == 2
    samples = samples_of(tmp_path / "out")
    assert samples[0]["format_ok_samples"] == 2
    assert samples[0]["chosen_sample"] == 1
    assert samples[2]["chosen_sample"] == 1
    # 15 samples over the 5 scored questions: 5 of the 6 scripted ones are well formed, unscripted ones empty.
    assert metrics["format_rate"] == pytest.approx(5 / 15)


def test_compare_runs_lists_changed_examples(shop: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("\n".join(PREDICTIONS) + "\n")
    changed = list(PREDICTIONS)
    changed[0] = "SELECT name FROM item"  # broken
    changed[3] = QUESTIONS[3]["query"]  # fixed
    second.write_text("\n".join(changed) + "\n")
    run_eval(shop, tmp_path / "a", "--predictions", str(first), "--no-plots")
    run_eval(shop, tmp_path / "b", "--predictions", str(second), "--no-plots")
    result = runner.invoke(app, ["compare-runs", str(tmp_path / "a"), str(tmp_path / "b"), "--json"])
    assert result.exit_code == 0, result.output
    comparison = json.loads(result.stdout)
    assert (comparison["fixed"], comparison["broken"]) == (1, 1)
    assert [(c["index"], c["change"]) for c in comparison["changed"]] == [(0, "broken"), (3, "fixed")]
    assert comparison["headline"]["execution_accuracy"]["delta"] == pytest.approx(0.0)
    text = runner.invoke(app, ["compare-runs", str(tmp_path / "a"), str(tmp_path / "b")])
    assert text.exit_code == 0
    assert "1 fixed" in text.stdout
    missing = runner.invoke(app, ["compare-runs", str(tmp_path / "a"), str(tmp_path / "nothing")])
    assert missing.exit_code == 2
    assert "not an eval run folder" in missing.output


def test_empty_predictions_are_errors_not_crashes(shop: Path, tmp_path: Path) -> None:
    predictions = tmp_path / "pred.txt"
    predictions.write_text("\n".join(["", "   ", *PREDICTIONS[2:]]) + "\n")
    summary = run_eval(shop, tmp_path / "out", "--predictions", str(predictions), "--no-plots")
    samples = samples_of(tmp_path / "out")
    assert [s["verdict"] for s in samples[:2]] == ["pred_error", "pred_error"]
    assert samples[0]["tags"] == ["PARSE_ERROR"]
    assert summary["metrics"]["valid_sql_rate"] == pytest.approx(3 / 5)


def test_eval_needs_exactly_one_source(shop: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "--task", str(shop / "questions.json"), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "exactly one of --predictions" in result.output
    result = runner.invoke(
        app, ["eval", "--task", str(shop / "questions.json"), "--out", str(tmp_path), "--backend", "replay",
              "--replay", str(tmp_path / "r.jsonl"), "--suite", str(tmp_path / "nope")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "suite folder not found" in result.output


def test_summary_round_trips_through_the_typed_loader(shop: Path, tmp_path: Path) -> None:
    from progress_sql.errors import DatasetError
    from progress_sql.evaluation.run import EvalSummary
    from progress_sql.runs.read import read_eval

    predictions = tmp_path / "pred.txt"
    predictions.write_text("\n".join(PREDICTIONS) + "\n")
    summary = run_eval(shop, tmp_path / "out", "--predictions", str(predictions), "--no-plots")
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == summary
    run = read_eval(tmp_path / "out")
    assert run.summary == EvalSummary.from_dict(summary)
    assert run.summary.to_dict() == summary
    assert run.summary.settings.preset["name"] == "spider"
    assert sorted(run.samples) == list(range(len(PREDICTIONS)))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "samples.jsonl").write_text("")
    (broken / "summary.json").write_text(json.dumps({"command": "audit", "settings": {}}))
    with pytest.raises(DatasetError, match="not an eval run folder"):
        read_eval(broken)


class _GreedyBackend:
    """A sampling backend at temperature 0: the same answer for every sample (what greedy decoding gives)."""

    name = "openai"
    draws = "n samples per request"

    def generate(self, conversations: Sequence[Sequence[Message]], config: GenerationConfig) -> list[list[str]]:
        return [["<think>count</think><sql>SELECT count(*) FROM item</sql>"] * config.n for _ in conversations]


def test_a_vote_at_temperature_zero_warns_once_and_is_recorded(
    shop: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--n 3`` at the default temperature 0 with a backend that samples: one warning on stderr before
    the run, ``degenerate_vote`` and the sentence in summary.json, the warning in report.md."""
    import progress_sql.backends.registry as registry

    monkeypatch.setattr(registry, "make_backend", lambda name, **options: _GreedyBackend())
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["eval", "--task", str(shop / "questions.json"), "--out", str(out), "--workers", "1", "--timeout", "5",
         "--json", "--backend", "openai", "--base-url", "http://unused/v1", "--model", "m", "--n", "3"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning:") == 1
    assert "--n 3 at temperature 0" in result.stderr
    assert "vote@3 and pass@k equal greedy EX" in result.stderr
    summary = json.loads(result.stdout)
    assert summary["settings"]["decoding"]["degenerate_vote"] is True
    assert [note for note in summary["notes"] if note.startswith("--n 3 at temperature 0")]
    assert summary["metrics"]["matched"] == 1  # the count question; every sample the same answer
    assert "- warning: a vote over identical samples" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("backend", "n", "temperature"),
    [("openai", 3, 0.8), ("openai", 1, 0.0), ("transformers", 1, 0.0), ("replay", 3, 0.0), (None, 3, 0.0)],
)
def test_no_vote_warning_where_samples_can_differ_or_there_is_no_vote(
    backend: str | None, n: int, temperature: float
) -> None:
    """Sampling at temperature > 0, one sample, scripted responses (replay) and prediction files
    (no backend) have no degenerate vote by setting."""
    from progress_sql.evaluation.run import degenerate_vote

    assert degenerate_vote(backend, n, temperature) is None
    assert degenerate_vote("transformers", 8, 0.0) is not None


def test_replay_backend_votes_at_temperature_zero_without_a_warning(shop: Path, tmp_path: Path) -> None:
    replay = tmp_path / "replay.jsonl"
    responses = ["<sql>SELECT 4</sql>", "<sql>SELECT count(*) FROM item</sql>"]
    script = {"key": QUESTIONS[2]["question"], "responses": responses}
    replay.write_text(json.dumps(script) + "\n")
    result = runner.invoke(
        app,
        ["eval", "--task", str(shop / "questions.json"), "--out", str(tmp_path / "out"), "--workers", "1",
         "--json", "--backend", "replay", "--replay", str(replay), "--n", "2"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "warning:" not in result.stderr
    assert json.loads(result.stdout)["settings"]["decoding"]["degenerate_vote"] is False
