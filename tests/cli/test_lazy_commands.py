"""Subcommands load lazily: ``progress-sql --help`` imports no subcommand module, a subcommand imports
its own module only, and the summaries ``--help`` lists are the commands' own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from progress_sql.cli import COMMANDS, module_of
from tests.cli.reference import commands

#: Libraries no ``--help`` and no ``eval --no-plots`` needs (plots, training, the trainers).
HEAVY = ("matplotlib", "numpy", "torch", "transformers", "pandas", "pyarrow")


def imported_after(argv: list[str]) -> tuple[str, set[str]]:
    """Run ``progress-sql ARGV`` in a fresh interpreter; its output and the modules it imported."""
    code = textwrap.dedent(
        f"""
        import json, sys
        from progress_sql.cli import app
        try:
            app({argv!r}, prog_name="progress-sql")
        except SystemExit:
            pass
        print(json.dumps(sorted(sys.modules)), file=sys.stderr)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))


def subcommand_modules(modules: set[str]) -> set[str]:
    return {module_of(name) for name in COMMANDS} & modules


def test_help_lists_every_command_without_importing_one() -> None:
    output, modules = imported_after(["--help"])
    for name, summary in COMMANDS.items():
        assert name in output
        assert summary.split()[0] in output
    assert subcommand_modules(modules) == set()
    assert "progress_sql.cli._common" not in modules
    assert not {m for m in modules if m.split(".")[0] in (*HEAVY, "sqlglot")}


def test_a_subcommand_imports_its_own_module_only() -> None:
    output, modules = imported_after(["eval", "--help"])
    assert "--predictions" in output
    assert subcommand_modules(modules) == {module_of("eval")}
    assert not {m for m in modules if m.split(".")[0] in HEAVY}


def test_each_summary_is_the_first_paragraph_of_its_commands_help() -> None:
    built = commands()  # every module imported: what docs/cli.md's generator reads
    assert list(built) == sorted(COMMANDS)
    for name, command in built.items():
        first_paragraph = (command.help or "").strip().split("\n\n")[0]
        assert " ".join(first_paragraph.split()) == COMMANDS[name], name
