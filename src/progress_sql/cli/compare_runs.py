"""``progress-sql compare-runs A B``: two evaluation runs side by side (headline metrics, per-level
accuracies, the examples whose verdict changed); docs/evaluation.md#comparing-runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from progress_sql.cli._common import add_command, json_option, stdout, table
from progress_sql.jsonio import dumps, escape_surrogates
from progress_sql.runs.compare import HEADLINE, compare


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def compare_runs_command(
    a: Path = typer.Argument(..., help="First run folder (written by progress-sql eval)."),
    b: Path = typer.Argument(..., help="Second run folder."),
    show: int = typer.Option(20, "--show", help="How many changed examples to list."),
    as_json: bool = json_option(),
) -> None:
    """Two evaluation runs side by side, with the examples whose verdict changed."""
    result = compare(a, b)
    if as_json:
        typer.echo(dumps(result).rstrip("\n"))  # a lone surrogate a model wrote: escaped
        return
    if not result["same_task"] or not result["same_preset"]:
        stdout.print("[yellow]warning:[/] the runs differ in task or preset; differences mix both effects")
    rows = table(f"A = {a}   B = {b}", ["metric"], ["A (%)", "B (%)", "B - A (points)"])
    for key, value in result["headline"].items():
        label = dict(HEADLINE).get(key, key)
        delta = value["delta"]
        rows.add_row(label, _fmt(value["a"]), _fmt(value["b"]), "n/a" if delta is None else f"{100 * delta:+.2f}")
    for level, value in result["by_level"].items():
        delta = value["delta"]
        rows.add_row(
            f"EX {level}", _fmt(value["a"]), _fmt(value["b"]), "n/a" if delta is None else f"{100 * delta:+.2f}"
        )
    stdout.print(rows)
    stdout.print(f"changed examples: {result['fixed']} fixed (wrong in A, right in B), {result['broken']} broken")
    for item in result["changed"][:show]:
        stdout.print(
            escape_surrogates(  # a lone surrogate a model wrote cannot reach a UTF-8 terminal
                f"  #{item['index']} {item['db_id']} [{item['level']}] {item['change']}: "
                f"A {item['a']['verdict']}: {item['a']['sql']}\n      B {item['b']['verdict']}: {item['b']['sql']}"
            ),
            markup=False,
        )


def register(app: typer.Typer) -> None:
    add_command(app, "compare-runs", compare_runs_command)
