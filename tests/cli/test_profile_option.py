"""``--profile NAME`` on train, ablate, rollout, eval and export (docs/profiles.md#choosing-a-profile):
the profile is the base of every setting the options leave unset, an option given wins, the run's
``summary.json`` (export: its manifest) records the profile, and ``inspect`` and ``view`` show its
name; an unknown name fails with the known ones (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.evaluation.analysis import odt_config_version
from progress_sql.export.build import manifest_path
from progress_sql.profiles import PROFILES
from progress_sql.runfolder import RunFolder
from progress_sql.view import read_run
from tests.cli.test_run_folders import _eval, _rollout

runner = CliRunner()
COMMANDS = ("train", "ablate", "rollout", "eval", "export")


def _summary(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_a_profile_and_says_an_option_wins(command: str) -> None:
    [option] = [p for p in get_command(app).commands[command].params if "--profile" in p.opts]  # type: ignore[attr-defined]
    assert option.default == "progress-sql"
    assert all(name in option.help for name in PROFILES)
    assert "an option given here wins over the profile" in option.help


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_profile_names_the_known_ones(command: str, music_dir: Path, tmp_path: Path) -> None:
    args = {
        "train": ["train", "--out", str(tmp_path / "t")],
        "ablate": ["ablate", "--quick", "--out", str(tmp_path / "a")],
        "rollout": _rollout(music_dir, tmp_path / "r"),
        "eval": _eval(music_dir, tmp_path / "e"),
        "export": ["export", "--format", "trl", "--out", str(tmp_path / "x.jsonl"), "--task",
                   str(music_dir / "questions.json"), "--workers", "1"],
    }[command]  # fmt: skip
    result = runner.invoke(app, [*args, "--profile", "papr"])
    assert result.exit_code == 2, result.output
    assert "papr" in result.output
    assert all(name in result.output for name in PROFILES)


def test_rollout_under_paper_runs_the_papers_environment_and_an_option_wins(music_dir: Path, tmp_path: Path) -> None:
    default = tmp_path / "default"
    assert runner.invoke(app, _rollout(music_dir, default)).exit_code == 0
    paper = tmp_path / "paper"
    result = runner.invoke(app, [*_rollout(music_dir, paper), "--profile", "paper"])
    assert result.exit_code == 0, result.output
    settings = _summary(paper)["settings"]
    assert settings["profile"] == PROFILES["paper"].settings()
    assert (settings["preset"], settings["schema_profile"], settings["reward"]["name"]) == (
        "bird", "ddl", "progressive-paper",
    )  # fmt: skip
    assert settings["turns"] == 2  # --turns, given, wins over the profile's T = 4
    before = _summary(default)["settings"]
    assert before["profile"]["name"] == "progress-sql"
    assert (before["preset"], before["schema_profile"], before["reward"]["name"]) == ("strict", "full", "progressive")

    chosen = tmp_path / "chosen"
    given = ["--profile", "paper", "--preset", "strict", "--reward", "progressive", "--schema-profile", "full"]
    assert runner.invoke(app, [*_rollout(music_dir, chosen), *given]).exit_code == 0
    settings = _summary(chosen)["settings"]
    assert (settings["preset"], settings["schema_profile"], settings["reward"]["name"]) == (
        "strict", "full", "progressive",
    )  # fmt: skip
    assert settings["profile"]["name"] == "paper"


def test_eval_under_paper_analyses_with_the_papers_odt(music_dir: Path, tmp_path: Path) -> None:
    default, paper = tmp_path / "default" / "run", tmp_path / "paper" / "run"
    for out, extra in ((default, []), (paper, ["--profile", "paper"])):
        out.parent.mkdir(parents=True)
        result = runner.invoke(app, [*_eval(music_dir, out), *extra])
        assert result.exit_code == 0, result.output
    recorded = _summary(paper)
    assert recorded["settings"]["profile"] == PROFILES["paper"].settings()
    assert recorded["odt_config_version"] == odt_config_version(PROFILES["paper"].odt_config())
    assert _summary(default)["odt_config_version"] == odt_config_version()
    assert recorded["odt_config_version"] != _summary(default)["odt_config_version"]
    assert _summary(default)["settings"]["profile"]["name"] == "progress-sql"


def test_export_under_paper_writes_ddl_prompts_and_records_the_profile(music_dir: Path, tmp_path: Path) -> None:
    manifests = {}
    for name in PROFILES:
        out = tmp_path / f"{name}.jsonl"
        task = str(music_dir / "questions.json")
        result = runner.invoke(app, ["export", "--format", "trl", "--out", str(out), "--task", task, "--workers", "1",
                                     "--profile", name])  # fmt: skip
        assert result.exit_code == 0, result.output
        manifests[name] = json.loads(manifest_path(out).read_text())
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        system_and_user = json.dumps(rows[0]["prompt"])
        # the sample values of the full schema profile appear only under progress-sql (paper: the DDL alone)
        assert ("-- examples:" in system_and_user) is (name == "progress-sql"), name
    for name, manifest in manifests.items():
        assert manifest["settings"]["profile"]["name"] == name
        assert manifest["settings"]["schema_profile"] == PROFILES[name].schema_profile.value


def test_inspect_and_view_show_the_profile(music_dir: Path, tmp_path: Path) -> None:
    run = tmp_path / "rollout"
    assert runner.invoke(app, [*_rollout(music_dir, run), "--profile", "paper"]).exit_code == 0
    inspected = runner.invoke(app, ["inspect", str(run), "--out", str(tmp_path / "inspect"), "--workers", "1"])
    assert inspected.exit_code == 0, inspected.output
    assert "profile: paper" in inspected.output.splitlines()
    assert _summary(tmp_path / "inspect")["profile"] == "paper"
    page = read_run(run)
    assert [header["profile"] for header in page.runs] == ["paper"]
    assert RunFolder(run).read_summary()["settings"]["profile"]["name"] == "paper"
