"""One CLI convention: shared options mean the same and default the same in every command, every
subcommand is documented, docs/cli.md follows ``--help``, and errors are ``error: ...`` with exit 2."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from progress_sql.cli import COMMAND_MODULES, POOL_COMMANDS, app
from progress_sql.cli._common import (
    DEFAULT_TIMEOUT_S,
    DEFAULT_WORKERS,
    TASK_HELP,
    TIMEOUT_EXCEPTIONS,
    TIMEOUT_HELP,
    WORKERS_HELP,
    add_command,
    timeout_default,
)
from progress_sql.errors import ConfigError
from progress_sql.judge.compare import PRESETS
from tests.cli.reference import BEGIN, END, commands, options_reference, splice, visible_options
from tests.conftest import REPO_ROOT

runner = CliRunner()
COMMANDS = commands()


def options_named(flag: str) -> list[tuple[str, Any]]:
    """``(command name, option)`` for every visible option spelled ``flag``."""
    return [(name, p) for name, command in COMMANDS.items() for p in visible_options(command) if flag in p.opts]


def test_every_module_registers_its_command() -> None:
    assert set(COMMANDS) == set(COMMAND_MODULES)


def test_the_commands_that_start_the_worker_server_early_run_queries_in_a_pool() -> None:
    """POOL_COMMANDS start the execution workers' fork server before their module is imported: each
    is a command with ``--workers`` (the pool's size), so the early start is never wasted on others."""
    with_workers = {name for name, _ in options_named("--workers")}
    assert POOL_COMMANDS.issubset(with_workers)
    assert "eval" in POOL_COMMANDS


def test_workers_means_one_per_core_at_zero_and_defaults_to_it_everywhere() -> None:
    found = options_named("--workers")
    assert {name for name, _ in found} == {"audit", "build-suite", "eval", "export", "inspect", "rollout"}
    for name, option in found:
        assert (name, option.default, option.help) == (name, DEFAULT_WORKERS, WORKERS_HELP)
    assert DEFAULT_WORKERS == 0


def test_one_timeout_default_and_a_stated_reason_for_each_exception() -> None:
    found = options_named("--timeout")
    assert {name for name, _ in found} == {"audit", "build-suite", "eval", "export", "rollout"}
    for name, option in found:
        assert option.default == timeout_default(name), name
        assert option.help.startswith(TIMEOUT_HELP), name
        if name in TIMEOUT_EXCEPTIONS:
            assert TIMEOUT_EXCEPTIONS[name][1] in option.help
        else:
            assert option.default == DEFAULT_TIMEOUT_S
    assert set(TIMEOUT_EXCEPTIONS) < {name for name, _ in found}  # most commands use the one default
    assert all(reason for _, reason in TIMEOUT_EXCEPTIONS.values())


def test_preset_is_always_the_comparison_semantics() -> None:
    found = options_named("--preset")
    assert {name for name, _ in found} == {"build-suite", "eval", "rollout"}
    for name, option in found:
        assert option.help.startswith(f"Comparison semantics: {', '.join(PRESETS)} (default: "), name
        assert option.default is None or option.default in PRESETS
    (train_preset,) = [p for p in COMMANDS["train"].params if "--preset" in p.opts]
    assert train_preset.hidden  # the deprecated alias of --algorithm
    assert [p.default for p in visible_options(COMMANDS["train"]) if "--algorithm" in p.opts] == ["grpo"]


@pytest.mark.parametrize(
    ("flag", "commands_with_it"),
    [
        ("--task", {"audit", "build-suite", "eval", "export", "inspect", "rollout", "split", "train"}),
        ("--data-dir", {"ablate", "audit", "build-suite", "eval", "export", "inspect", "rollout", "split", "train"}),
        ("--json", set(COMMAND_MODULES)),
    ],
)
def test_shared_options_have_one_help_text(flag: str, commands_with_it: set[str]) -> None:
    found = options_named(flag)
    assert {name for name, _ in found} == commands_with_it
    assert len({option.help for _, option in found}) == 1
    if flag == "--task":
        assert found[0][1].help == TASK_HELP
    assert {option.default for _, option in found} <= {None, False}


def test_out_is_a_run_folder_except_in_export() -> None:
    for name, option in options_named("--out"):
        if name in ("export", "view"):  # a data file (its run folder is --report-dir); the HTML page
            assert option.help.startswith("Output file")
            continue
        assert option.help.startswith("Run folder: summary.json, samples.jsonl, report.md"), name


def test_train_preset_still_works_with_a_warning(tmp_path: Any) -> None:
    result = runner.invoke(app, ["train", "--out", str(tmp_path), "--preset", "gspo", "--reward", "nope"])
    assert result.exit_code == 2
    assert "train --preset is deprecated" in result.stderr
    assert "unknown reward" in result.stderr  # the configuration was read with gspo and failed on the reward
    result = runner.invoke(app, ["train", "--out", str(tmp_path), "--algorithm", "ppo"])
    assert result.exit_code == 2
    assert "ppo" in result.stderr


def test_errors_are_one_line_on_stderr_with_exit_code_two() -> None:
    toy = typer.Typer()

    def broken(name: str = typer.Option("x", "--name", help="A name.")) -> None:
        """Fail on purpose."""
        raise ConfigError(f"bad --name {name}")

    add_command(toy, "broken", broken)
    add_command(toy, "other", broken)  # two commands: typer keeps the subcommand in the invocation
    result = runner.invoke(toy, ["broken", "--name", "y"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: bad --name y"
    assert "Fail on purpose." in runner.invoke(toy, ["broken", "--help"]).output


def test_every_subcommand_and_option_has_help_text() -> None:
    for name, command in COMMANDS.items():
        assert (command.help or "").strip(), name
        for option in visible_options(command):
            assert (option.help or "").strip(), f"{name} {option.opts}"


def test_every_subcommand_is_documented() -> None:
    documents = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    text = "\n".join(path.read_text(encoding="utf-8") for path in documents if path.name != "cli.md")
    for name in COMMANDS:
        assert f"progress-sql {name}" in text, f"no README or docs page (besides cli.md) shows progress-sql {name}"


def test_docs_cli_md_follows_the_commands() -> None:
    """Regenerate with: python -m tests.cli.reference docs/cli.md"""
    document = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert splice(document) == document
    generated = document.split(BEGIN)[1].split(END)[0]
    assert generated.strip() == options_reference().strip()
    for name, command in COMMANDS.items():
        section = generated.split(f"### `progress-sql {name}`")[1].split("### ")[0]
        for option in visible_options(command):
            assert f"`{option.opts[0]}`" in section, f"{name} {option.opts[0]}"
    for name, (seconds, _) in TIMEOUT_EXCEPTIONS.items():
        assert f"| `{name}` | {seconds:g} s |" in document
