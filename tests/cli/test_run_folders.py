"""Every command with ``--out DIR`` (``export``: ``--report-dir DIR``) leaves one run folder:
``summary.json`` (command, settings, versions), ``samples.jsonl`` (one record per line) and ``report.md``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.runfolder import RUN_FILES, RunFolder, basic_report

runner = CliRunner()


def answer(sql: str) -> str:
    return f"<think>plan</think><sql>{sql}</sql>"


def _questions(music_dir: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((music_dir / "questions.json").read_text())
    return items


def _eval(music_dir: Path, out: Path) -> list[str]:
    predictions = out.parent / "pred.txt"
    predictions.write_text("\n".join(q["query"] for q in _questions(music_dir)) + "\n")
    return ["eval", "--task", str(music_dir / "questions.json"), "--predictions", str(predictions), "--out", str(out),
            "--workers", "1", "--no-plots"]  # fmt: skip


def _rollout(music_dir: Path, out: Path) -> list[str]:
    replay = out.parent / "replay.jsonl"
    lines = [json.dumps({"key": q["question"], "responses": [answer(q["query"])]}) for q in _questions(music_dir)]
    replay.write_text("\n".join(lines) + "\n")
    return ["rollout", "--task", str(music_dir / "questions.json"), "--backend", "replay", "--replay", str(replay),
            "--turns", "2", "--out", str(out), "--workers", "1"]  # fmt: skip


def _build_suite(music_dir: Path, out: Path) -> list[str]:
    return ["build-suite", "--task", str(music_dir / "questions.json"), "--out", str(out), "--pool", "2",
            "--max-dbs", "2", "--workers", "1"]  # fmt: skip


def _audit(music_dir: Path, out: Path) -> list[str]:
    return ["audit", "--task", str(music_dir / "questions.json"), "--out", str(out), "--checks", "G03,G12",
            "--workers", "1"]  # fmt: skip


def _export(music_dir: Path, out: Path) -> list[str]:
    return ["export", "--format", "trl", "--task", str(music_dir / "questions.json"), "--out",
            str(out.parent / "rows.jsonl"), "--report-dir", str(out), "--workers", "1"]  # fmt: skip


def _reward_bound(music_dir: Path, out: Path) -> list[str]:
    return ["reward-bound", "--out", str(out), "--turns", "3"]


def _train(music_dir: Path, out: Path) -> list[str]:
    return ["train", "--out", str(out), "--steps", "1"]


def _ablate(music_dir: Path, out: Path) -> list[str]:
    return ["ablate", "--out", str(out), "--arms", "progressive,no-late"]


def _split(music_dir: Path, out: Path) -> list[str]:
    return ["split", "--task", str(music_dir / "questions.json"), "--out", str(out), "--fractions", "train=1"]


def _inspect(music_dir: Path, out: Path) -> list[str]:
    rollout = out.parent / "rollout-for-inspect"
    assert runner.invoke(app, _rollout(music_dir, rollout)).exit_code == 0
    return ["inspect", str(rollout), "--out", str(out), "--sample", "2"]


def _port_db(music_dir: Path, out: Path) -> list[str]:
    pytest.importorskip("duckdb", reason="needs the [engines] extra (scripts/test.sh installs it)")
    return ["port-db", str(music_dir / "database"), "--to", f"duckdb:{out / 'duckdb'}", "--out", str(out)]


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "split": _split,
    "inspect": _inspect,
    "eval": _eval,
    "rollout": _rollout,
    "build-suite": _build_suite,
    "audit": _audit,
    "export": _export,
    "reward-bound": _reward_bound,
    "train": _train,
    "ablate": _ablate,
    "port-db": _port_db,
}


@pytest.fixture
def fake_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """``train`` without the minutes of training: the recipe returns a small finished run (the CLI's
    run folder is under test here; tests/training runs the real loop)."""
    pytest.importorskip("matplotlib", reason="the training report draws plots")
    from progress_sql.training import recipe
    from progress_sql.training.rl import RLResult

    def run_embedded(config: recipe.TrainConfig, phase: Any) -> recipe.RunResult:
        config.out.mkdir(parents=True, exist_ok=True)
        steps = [{"step": 1, "reward": 0.5, "rewards/fmt/mean": 0.5}, {"step": 2, "reward": 0.75}]
        checks = [{"step": step, "validation_ex": ex} for step, ex in ((0, 0.25), (1, 0.5), (2, 0.5))]
        # the kept weights are step 1's (a tie with step 2 keeps the earlier), the last step's EX beside them
        selection = {"rule": "validation", "every": 1, "checks": checks, "chosen_step": 1, "last_step": 2}
        return recipe.RunResult(
            config,
            data_sizes={"rl_prompts": 4},
            before={"heldout": recipe.Accuracy.of([True, False, False, False])},
            after={"heldout": recipe.Accuracy.of([True, True, False, False])},
            rl={"progressive": RLResult(steps=2, seconds=0.1, metrics=steps)},
            rl_selection={"progressive": selection},
            last_after={"heldout": recipe.Accuracy.of([True, False, True, False])},
            guard="kept the RL model",
            seconds=0.2,
        )

    monkeypatch.setattr(recipe, "run_embedded", run_embedded)


def test_the_list_covers_every_command_with_out() -> None:
    import typer.main

    group = typer.main.get_command(app)
    with_out = {
        name
        for name, command in group.commands.items()  # type: ignore[attr-defined]
        if any("--out" in p.opts for p in command.params)
    }
    assert with_out == set(COMMANDS) | {"view"}  # view's --out is the HTML page, not a run folder


@pytest.fixture
def fake_ablation(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ablate`` without the training: two finished arms on one seed (tests/training/test_ablate.py
    runs the real loop)."""
    pytest.importorskip("matplotlib", reason="the ablation report draws a plot")
    from progress_sql.studies import ablate

    def run_ablate(config: ablate.AblateConfig, phase: Any) -> ablate.AblateResult:
        config.out.mkdir(parents=True, exist_ok=True)

        def run(arm: str, matches: tuple[bool, ...]) -> ablate.ArmRun:
            measured = ablate.Measured(matches, matches, 2, {})
            return ablate.ArmRun(arm, 0, {"reward": "progressive"}, 2, 0.1, measured, {"late": [1.0, 2.0]}, [2.0, 1.5],
                                 [0.5, 0.0], {"1": [2.0]})  # fmt: skip

        warm = ablate.Measured((False, True, False, True), (False, True, True, True), 2, {})
        runs = [run("progressive", (True, True, False, True)), run("no-late", (False, True, False, True))]
        return ablate.AblateResult(config, warm={0: warm}, runs=runs, seconds=0.2)

    monkeypatch.setattr(ablate, "run_ablate", run_ablate)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_out_command_writes_a_run_folder(name: str, music_dir: Path, tmp_path: Path, request: Any) -> None:
    if name == "train":
        request.getfixturevalue("fake_training")
    if name == "ablate":
        request.getfixturevalue("fake_ablation")
    out = tmp_path / "run"
    result = runner.invoke(app, COMMANDS[name](music_dir, out))
    assert result.exit_code == 0, result.output
    assert [f for f in RUN_FILES if (out / f).is_file()] == list(RUN_FILES)
    folder = RunFolder(out)
    summary = folder.read_summary()
    assert summary["command"] == name
    assert isinstance(summary["settings"], dict)
    assert summary["settings"]
    assert {"progress_sql", "python", "sqlite", "sqlglot"} <= set(summary["versions"])
    records = folder.read_records()
    assert records
    assert all(isinstance(record, dict) for record in records)
    assert folder.report_path.read_text().startswith("# ")


def test_files_written_before_the_run_folder_are_kept(music_dir: Path, tmp_path: Path) -> None:
    """The run folder adds files; the ones users and tests read stay."""
    audit = tmp_path / "audit"
    assert runner.invoke(app, _audit(music_dir, audit)).exit_code == 0
    legacy = (audit / "records.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in legacy] == RunFolder(audit).read_records()
    bound = tmp_path / "bound"
    assert runner.invoke(app, _reward_bound(music_dir, bound)).exit_code == 0
    record = json.loads((bound / "reward_bound.json").read_text())
    assert [r["k_star"] for r in RunFolder(bound).read_records()] == list(record["bound"])
    suite = tmp_path / "suite"
    assert runner.invoke(app, _build_suite(music_dir, suite)).exit_code == 0
    assert (suite / "manifest.json").is_file()
    assert len(RunFolder(suite).read_records()) == len(_questions(music_dir))


def test_export_report_dir_lists_every_drawn_example(music_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert runner.invoke(app, _export(music_dir, out)).exit_code == 0
    assert (tmp_path / "rows.manifest.json").is_file()  # the data file's manifest, as before
    records = RunFolder(out).read_records()
    assert len(records) == len(_questions(music_dir))
    assert {r["status"] for r in records} <= {"exported", "dropped"}
    rows = (tmp_path / "rows.jsonl").read_text().splitlines()
    assert sum(r["status"] == "exported" for r in records) == len(rows)
    summary = RunFolder(out).read_summary()
    assert summary["rows"] == len(rows)
    assert summary["settings"]["filter"] == "rl-default"
    assert not (tmp_path / "summary.json").exists()  # nothing beside the data file without --report-dir


def test_basic_report_lists_settings_and_results() -> None:
    report = basic_report("Demo", {"settings": {"turns": 2}, "versions": {}}, results={"ok": True})
    assert report.splitlines() == [
        "# Demo",
        "",
        "## Settings",
        "",
        "- turns: `2`",
        "",
        "## Results",
        "",
        "| result | value |",
        "|---|---:|",
        "| ok | True |",
    ]
