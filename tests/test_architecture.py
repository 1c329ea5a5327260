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
    assert "Contracts: 4 kept, 0 broken" in run.stdout


def _top_level_modules() -> set[str]:
    """The package's modules and subpackages; ``__main__`` (``python -m progress_sql``, the same entry
    point as the ``progress-sql`` script) sits above every layer, as the script does."""
    package = ROOT / "src" / "progress_sql"
    return {p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")} | {
        p.name for p in package.iterdir() if (p / "__init__.py").is_file()
    }


def test_the_trainer_contract_names_every_top_level_module_but_integrations() -> None:
    (forbidden,) = [c for c in _contracts() if c["type"] == "forbidden" and "trainer" in str(c["name"])]
    top = _top_level_modules()
    named = {str(m).removeprefix("progress_sql.") for m in forbidden["source_modules"]}  # type: ignore[union-attr]
    assert named == top - {"integrations"}


def test_every_package_has_a_layer_and_docs_architecture_lists_the_same_order() -> None:
    layers = _layers()
    top = _top_level_modules()
    in_layers = {name.strip() for layer in layers for name in layer.split("|")}
    assert in_layers == top
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n# layers, high to low\n(.*?)```", doc, re.S)
    assert block is not None, "docs/architecture.md needs the ```text # layers, high to low``` block"
    drawn = [re.sub(r"\s+", " ", line.split("#")[0]).strip() for line in block.group(1).splitlines()]
    assert [line for line in drawn if line] == [re.sub(r"\s+", " ", layer) for layer in layers]


def import_cycles(package: str = "progress_sql") -> set[frozenset[str]]:
    """The package's import cycles: strongly connected groups of modules (function-local imports count:
    grimp reads every import statement)."""
    grimp = pytest.importorskip("grimp", reason="import-linter's grimp comes with the [dev] extra")
    graph = grimp.build_graph(package)
    edges = {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: set[frozenset[str]] = set()

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in edges[module]:
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            group = {stack.pop()}
            while module not in group:
                group.add(stack.pop())
            if len(group) > 1:
                cycles.add(frozenset(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges)))
    for module in sorted(edges):
        if module not in order:
            visit(module)
    return cycles


def test_no_import_cycles() -> None:
    """No strongly connected group of modules anywhere (function-local imports count); import-linter's
    ``acyclic_siblings`` contract (pyproject.toml) says the same for the siblings of each package."""
    found = import_cycles()
    assert not found, f"import cycles: {[sorted(c) for c in found]}"


#: What builds or judges an execution job by hand: the names only the judging package and the runner use.
JUDGING_NAMES = frozenset({"ExecJob", "WriteJob", "write_job", "run_write", "judge_write", "judge"})
#: Comparisons of results that are not answers: a test suite's neighbours and the degenerate-gold
#: check compare candidate queries' results with the gold's under a preset, with no answer to judge.
RESULT_COMPARISONS = {
    ("progress_sql/testsuite/distill.py", "judge"),
    ("progress_sql/audit/single.py", "judge"),
}


def test_answers_are_judged_only_by_the_judging_package() -> None:
    """One call-site family for judging: outside ``judge/`` (the gold store's ``answer_job``,
    ``run_answers``, ``judgement``, ``judge_many``, ``suite_verdicts``) and ``execution/`` (the runner),
    no module builds jobs or calls the verdict functions itself."""
    import ast

    source = ROOT / "src"
    found = set()
    for path in sorted((source / "progress_sql").rglob("*.py")):
        relative = path.relative_to(source).as_posix()
        if relative.startswith(("progress_sql/judge/", "progress_sql/execution/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                ("progress_sql.execution", "progress_sql.judge")
            ):
                found |= {(relative, alias.name) for alias in node.names if alias.name in JUDGING_NAMES}
    assert found - RESULT_COMPARISONS == set(), "judge answers through the gold store (progress_sql.judge.gold)"
    assert found >= RESULT_COMPARISONS, f"allowances no longer needed: {sorted(RESULT_COMPARISONS - found)}"


#: The functions allowed over 80 lines, and why each stays whole.
LONG_FUNCTIONS = {
    # the pool's one scheduling loop: submissions, deadlines, crashed and restarted workers share its state
    ("progress_sql/execution/pool.py", "run_many"),
    # the warm start's step loop: schedule, validation target, cool-down and checkpoints share the step state
    ("progress_sql/training/sft.py", "run_sft"),
    # verl's AgentLoopBase.run as upstream shapes it: one async episode, turn by turn
    ("progress_sql/integrations/verl/agent_loop.py", "run"),
}


def _functions() -> list[tuple[str, str, int]]:
    import ast

    source = ROOT / "src"
    found = []
    for path in sorted((source / "progress_sql").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                found.append((path.relative_to(source).as_posix(), node.name, length))
    return found


def test_functions_stay_short_and_commands_thin() -> None:
    """At most the three functions of LONG_FUNCTIONS are over 80 lines; a command function (``cli/``)
    parses, calls one library entry point and prints, in at most 60 lines with its options."""
    functions = _functions()
    long = {(path, name) for path, name, length in functions if length > 80}
    assert long <= LONG_FUNCTIONS, f"functions over 80 lines: {sorted(long - LONG_FUNCTIONS)}"
    assert len(LONG_FUNCTIONS) <= 3
    commands = [(path, name, n) for path, name, n in functions if path.startswith("progress_sql/cli/")
                and name.endswith("_command") and n > 60]  # fmt: skip
    assert commands == [], f"command functions over 60 lines: {commands}"


def test_every_module_docs_architecture_names_exists() -> None:
    """The concept table, the data-flow steps and the entry points name modules that exist (a path in
    backticks: ``judge/gold.py``, ``cluster/``), so a move that forgets the page fails here."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = ROOT / "src" / "progress_sql"
    named = set(re.findall(r"`((?:[a-z_]+/)*[a-z_]+(?:\.py|/))`", doc))
    # a name inside a row's parentheses is relative to the package the row names (`view/` (`model.py`))
    present = {p.relative_to(package).as_posix() + ("/" if p.is_dir() else "") for p in package.rglob("*")}
    missing = sorted(
        name for name in named
        if not (package / name).exists() and not (ROOT / name).exists()
        and not any(path == name or path.endswith("/" + name) for path in present)
    )  # fmt: skip
    assert len(named) > 40
    assert missing == [], f"docs/architecture.md names modules that do not exist: {missing}"
