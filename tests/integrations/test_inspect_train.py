"""`progress-sql inspect` on a real `progress-sql train` run folder: the RL phase logs every trajectory
to ``rl/rollouts.jsonl`` (its example, turn records and reward), inspect reads that log, and a
planted hard-coded episode in it (the rollout's own log records of a scripted policy) is flagged."""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.env import EnvConfig
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import TrlRollout
from progress_sql.runfolder import ROLLOUTS_FILE, RUN_FILES
from progress_sql.training import recipe
from progress_sql.training.rl import episode_records
from tests.integrations.test_trl_rollout import FORMAT, ScriptedGenerator, kept_ids
from tests.suite_case import HARD_CODED, build_suite_case

runner = CliRunner()
STEPS, PROMPTS, GENERATIONS = 1, 2, 2


@pytest.fixture(scope="module")
def train_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded default with a one-step budget (held-out sets of 8 to keep the evaluation short)."""
    out = tmp_path_factory.mktemp("train") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(recipe, "TrainConfig", partial(recipe.TrainConfig, heldout_size=8, heldout_rl_size=8))
        result = runner.invoke(app, ["train", "--out", str(out), "--steps", str(STEPS), "--sft-steps", "6",
                                     "--rl-prompts", "4", "--generations", str(GENERATIONS), "--prompts-per-step",
                                     str(PROMPTS), "--max-turn-tokens", "16"])  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_train_logs_every_trajectory_and_inspect_reads_it(train_run: Path, tmp_path: Path) -> None:
    leakage = json.loads((train_run / "summary.json").read_text())["leakage"]
    assert leakage["decision"] == "not applied"  # the embedded default: templates over two Spider dev databases
    assert "concert_singer, pets_1" in leakage["reason"]
    assert "never score it on Spider dev" in leakage["reason"]
    logged = _lines(train_run / "rl" / ROLLOUTS_FILE)
    assert len(logged) == STEPS * PROMPTS * GENERATIONS
    assert {r["step"] for r in logged} == {1}
    assert all(r["turns"] and r["example"]["db_id"] in {"concert_singer", "pets_1"} for r in logged)
    assert all(r["reward"]["total"] == pytest.approx(sum(r["reward"]["components"].values())) for r in logged)
    out = tmp_path / "inspect"
    result = runner.invoke(app, ["inspect", str(train_run), "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert all((out / name).is_file() for name in RUN_FILES)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kind"], summary["episodes"], summary["inspected"]) == ("train", len(logged), len(logged))
    assert summary["per_reason"]["suite_failure"].startswith("not checkable for this run")
    inspected = _lines(out / "samples.jsonl")
    assert {(r["step"], r["run_reward"]) for r in inspected} == {(1, "progressive")}
    assert len(inspected) == len(logged)


def test_a_hard_coded_episode_in_a_train_log_is_flagged(
    train_run: Path, tmp_path: Path, tiny_tokenizer: Any, pool: ExecutionPool
) -> None:
    run = tmp_path / "run"
    (run / "rl").mkdir(parents=True)
    shutil.copy(train_run / "summary.json", run / "summary.json")
    shutil.copy(train_run / "rl" / ROLLOUTS_FILE, run / "rl" / ROLLOUTS_FILE)
    case = build_suite_case(tmp_path / "case")
    prompt = FORMAT.prompt(case.example.db_id, case.example.question)
    policy = ScriptedGenerator(tiny_tokenizer, {prompt: [HARD_CODED]})
    rollout = TrlRollout([case.example], tiny_tokenizer, FORMAT, policy, env_config=EnvConfig(max_turns=1), pool=pool)
    output = rollout([prompt], kept_ids(0))
    (planted,) = episode_records(rollout, output, step=2)
    assert planted["reward"]["total"] > 0
    assert planted["turns"][0]["match"]
    with (run / "rl" / ROLLOUTS_FILE).open("a") as log:  # as the next step of the RL phase appends it
        log.write(json.dumps(planted) + "\n")
    out = tmp_path / "inspect"
    result = runner.invoke(app, ["inspect", str(run), "--out", str(out), "--workers", "1", "--suite", str(case.suite)])
    assert result.exit_code == 0, result.output
    flagged = [r for r in _lines(out / "samples.jsonl") if r["reasons"]]
    assert [(r["db_id"], r["step"], set(r["reasons"])) for r in flagged] == [
        ("tally", 2, {"hard_coded_literal", "no_from", "suite_failure"})
    ]
