"""scripts/check_install_set.py without the registry: the command it runs and what it refuses.

The resolution itself needs the package registry and runs by hand (docs/training.md shows its output)."""

from __future__ import annotations

import doctest
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT


def checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_install_set", REPO_ROOT / "scripts" / "check_install_set.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_its_examples_hold() -> None:
    failed, attempted = doctest.testmod(checker())
    assert attempted >= 4
    assert failed == 0


def test_the_real_resolution_is_the_documented_command_under_the_sets_interpreter(tmp_path: Path) -> None:
    """No platform or binary-only flags: pip sees source archives as a real `pip install -r` does."""
    module = checker()
    requirements = REPO_ROOT / "installsets" / "verl-gpu.txt"
    command = module.pip_command(
        requirements, tmp_path / "t", tmp_path / "r.json", interpreter="/x/python3.12", python=None
    )
    assert command[:4] == ["/x/python3.12", "-m", "pip", "install"]
    assert command[-2:] == ["-r", str(requirements)]
    assert not [part for part in command if part.startswith(("--platform", "--only-binary", "--python-version"))]
    assert "--dry-run" in command
    assert "--report" in command


def test_an_interpreter_of_another_version_is_not_taken(tmp_path: Path) -> None:
    """A pyenv shim whose version is not active fails; an interpreter of the wrong version is refused."""
    module = checker()
    shim = tmp_path / "python3.12"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\nexit 127\n")
    shim.chmod(0o755)
    assert not module.reports_version(str(shim), "3.12")
    assert module.reports_version(sys.executable, f"{sys.version_info[0]}.{sys.version_info[1]}")
    assert not module.reports_version(sys.executable, "2.7")


def test_every_install_set_names_its_interpreter() -> None:
    for path in sorted((REPO_ROOT / "installsets").glob("*.txt")):
        assert checker()._header(path.read_text(), "python", "") in {"3.11", "3.12"}, path


def test_a_missing_interpreter_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = checker()
    monkeypatch.setattr(module.shutil, "which", lambda _name: None)
    monkeypatch.setattr(module.Path, "home", lambda: tmp_path)  # no pyenv versions there
    assert module.main(["verl-gpu"]) == 2
    error = capsys.readouterr().err
    assert "no python3.12 on PATH or in pyenv" in error
    assert "--interpreter" in error
    assert "--wheels-only" in error


def test_an_unknown_set_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert checker().main(["nope"]) == 2
    assert "known: skyrl-gpu, trl-gpu, verl-gpu" in capsys.readouterr().err
