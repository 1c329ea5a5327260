"""The package's layering, written once in pyproject.toml ([tool.importlinter]) and drawn in
docs/architecture.md: import-linter checks every import (function-local ones too), and the document
must list the same layers in the same order."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["importlinter"]["contracts"])


def _layers() -> list[str]:
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    return [str(layer) for layer in layers["layers"]]  # type: ignore[union-attr]


def test_no_module_imports_from_a_layer_above_it_and_only_integrations_imports_a_trainer() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if lint is None:
        pytest.fail("lint-imports is missing: install the [dev] extra (scripts/setup.sh dev)")
    run = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken" in run.stdout


def test_the_trainer_contract_names_every_top_level_module_but_integrations() -> None:
    (forbidden,) = [c for c in _contracts() if c["type"] == "forbidden"]
    package = ROOT / "src" / "progress_sql"
    top = {p.stem for p in package.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in package.iterdir() if (p / "__init__.py").is_file()
    }
    named = {str(m).removeprefix("progress_sql.") for m in forbidden["source_modules"]}  # type: ignore[union-attr]
    assert named == top - {"integrations"}


def test_every_package_has_a_layer_and_docs_architecture_lists_the_same_order() -> None:
    layers = _layers()
    package = ROOT / "src" / "progress_sql"
    top = {p.stem for p in package.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in package.iterdir() if (p / "__init__.py").is_file()
    }
    in_layers = {name.strip() for layer in layers for name in layer.split("|")}
    assert in_layers == top
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n# layers, high to low\n(.*?)```", doc, re.S)
    assert block is not None, "docs/architecture.md needs the ```text # layers, high to low``` block"
    drawn = [re.sub(r"\s+", " ", line.split("#")[0]).strip() for line in block.group(1).splitlines()]
    assert [line for line in drawn if line] == [re.sub(r"\s+", " ", layer) for layer in layers]
