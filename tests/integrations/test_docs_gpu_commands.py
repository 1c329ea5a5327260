"""Every command of docs/training.md's GPU sections (TRL, verl, SkyRL), in the order a reader runs
them, over a Spider-layout folder of real SQLite databases: exports and splits run whole, ``train``
(directly or through a recipe) runs its real data stage up to the model load, and each recipe that
reads exported files finds the files the commands above it wrote. A command the test cannot classify
fails it, so a new command block cannot slip in untested."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.export.build import manifest_path
from tests.conftest import REPO_ROOT
from tests.integrations.recipe_data import spider_layout, train_until_model_load

DOC = REPO_ROOT / "docs" / "training.md"
SECTION = ("## A real model on a GPU", "## A clean RL set")
#: The docs' example folders, mapped into the test's working folder (relative, as a reader's would be).
PLACES = {"~/data/spider": "spider", "/shared/spider": "spider", "/shared/": "shared/", "$HOME/": "home/"}
#: Commands that are no data or configuration stage of training, and where they are covered instead.
NOT_A_DATA_STAGE = {
    "pip": "installs the environment (installsets/ are resolved by scripts/check_install_set.py)",
    "python": "a virtual environment, or verl's checkpoint merger on a trained run",
    "python3.12": "a virtual environment",
    ".": "activates a virtual environment",
    "source": "activates a virtual environment",
    "ray": "starts the cluster",
    "eval": "evaluates a trained checkpoint (progress-sql eval: tests/cli, tests/evaluation)",
}
#: The variables through which each trainer's recipe reads exported files.
RECIPE_INPUTS = {"verl": ("TRAIN_FILES", "VAL_FILES"), "skyrl": ("TRAIN_DATA", "VAL_DATA")}

runner = CliRunner()


@dataclass(frozen=True)
class DocCommand:
    """One command line of a bash block: its leading variable assignments and its words."""

    env: dict[str, str]
    words: list[str]
    line: str = field(compare=False)


def doc_commands() -> list[DocCommand]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(SECTION[0]) : text.index(SECTION[1])]
    commands = []
    for block in re.findall(r"```(?:bash|sh)\n(.*?)```", section, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            for place, here in PLACES.items():
                line = line.replace(place, here)
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                env = {}
                while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
                    name, _, value = words.pop(0).partition("=")
                    env[name] = value
                if words:
                    commands.append(DocCommand(env, words, line.strip()))
    return commands


def run_cli(command: DocCommand) -> None:
    result = runner.invoke(app, command.words[1:])
    assert result.exit_code == 0, f"{command.line}\n{result.output}"
    if command.words[1] == "export":
        out = Path(command.words[command.words.index("--out") + 1])
        manifest = json.loads(manifest_path(out).read_text(encoding="utf-8"))
        assert manifest["source"]["leakage"]["decision"] == "clean", command.line


def run_recipe(command: DocCommand, monkeypatch: pytest.MonkeyPatch, hub: Path) -> None:
    script = REPO_ROOT / command.words[1]
    trainer = script.parent.name
    for variable in RECIPE_INPUTS.get(trainer, ()):
        assert Path(command.env[variable]).is_file(), f"{command.line}: {variable} names no file the docs wrote"
    if trainer != "trl":
        return  # verl's and SkyRL's configuration stages: tests/with_verl/test_recipes.py, test_skyrl_recipes.py
    printed = subprocess.run(
        ["bash", str(script), *command.words[2:]],
        env={**os.environ, **command.env, "PROGRESS_SQL_DRY_RUN": "1"},
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    run_train(printed[printed.index("train") :], command.line, monkeypatch, hub)


def run_train(arguments: list[str], line: str, monkeypatch: pytest.MonkeyPatch, hub: Path) -> None:
    stage = train_until_model_load(arguments, monkeypatch, hub)
    assert stage.reached_model_load, f"{line}\n{stage.output}"
    assert stage.config is not None
    assert not stage.config.allow_eval_overlap
    assert (stage.config.out / "dropped.jsonl").is_file()


def test_every_gpu_command_of_the_docs_passes_its_data_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spider_layout(tmp_path / "spider")
    monkeypatch.chdir(tmp_path)
    handlers: dict[str, Callable[[DocCommand], None]] = {
        "export": run_cli,
        "split": run_cli,
        "train": lambda c: run_train(c.words[1:], c.line, monkeypatch, tmp_path / "hub"),
        "recipe": lambda c: run_recipe(c, monkeypatch, tmp_path / "hub"),
    }
    ran = []
    for command in doc_commands():
        program = command.words[0]
        kind = command.words[1] if program == "progress-sql" else "recipe" if program == "bash" else program
        if kind in NOT_A_DATA_STAGE:
            continue
        assert kind in handlers, f"docs/training.md runs {command.line!r}: no data stage known for it here"
        handlers[kind](command)
        ran.append(kind)
    # the TRL export and recipes, verl's split and exports and recipes, SkyRL's exports and recipes
    assert ran.count("export") == 5
    assert ran.count("split") == 2
    assert ran.count("recipe") >= 7
