"""``progress-sql diagnose``: compare one predicted SQL with a gold SQL through the ODT."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.panel import Panel
from rich.table import Table

from progress_sql.cli._common import add_command, fail, json_option, stdout, table
from progress_sql.data.schema import Schema, read_schema
from progress_sql.errors import DatasetError
from progress_sql.odt import TAGS, Diagnosis, diagnose


def diagnosis_record(diagnosis: Diagnosis) -> dict[str, Any]:
    """The JSON shape of a diagnosis (stable keys, rounded to 6 decimals)."""
    return {
        "status": diagnosis.status,
        "f_struct": round(diagnosis.f_struct, 6),
        "f_lex": round(diagnosis.f_lex, 6),
        "f": round(diagnosis.f, 6),
        "tags": list(diagnosis.tags),
        "features": {name: round(value, 6) for name, value in diagnosis.features.items()},
        "feedback": diagnosis.feedback,
        "reason": diagnosis.reason,
    }


def print_diagnosis(diagnosis: Diagnosis, title: str = "ODT diagnosis") -> None:
    """Render a diagnosis for a terminal."""
    scores = table(title, ["score"], ["value"])
    scores.add_row("F_struct (structure)", f"{diagnosis.f_struct:.4f}")
    scores.add_row("F_lex (2-gram Jaccard)", f"{diagnosis.f_lex:.4f}")
    scores.add_row("F = (F_struct + F_lex) / 2", f"{diagnosis.f:.4f}")
    stdout.print(scores)
    if diagnosis.status != "ok":
        stdout.print(f"[yellow]{diagnosis.status}[/]: {diagnosis.reason}")
    if diagnosis.features:
        features = table("feature similarities (main SELECT)", ["feature"], ["similarity"])
        for name, value in diagnosis.features.items():
            style = "" if value == 1.0 else "red"
            features.add_row(name, f"[{style}]{value:.4f}[/]" if style else f"{value:.4f}")
        stdout.print(features)
    if diagnosis.tags:
        tags = Table(title="diagnostic tags", header_style="bold")
        tags.add_column("tag", style="bold red")
        tags.add_column("category")
        tags.add_column("meaning")
        for tag in diagnosis.tags:
            spec = TAGS[tag]
            tags.add_row(tag, spec.category, spec.description)
        stdout.print(tags)
    else:
        stdout.print("[green]no diagnostic tags[/]")
    stdout.print(Panel(diagnosis.feedback, title="feedback (next user turn)", expand=False))


def _load_schema(path: Path | None) -> Schema | None:
    if path is None:
        return None
    try:
        return read_schema(path)
    except DatasetError as error:
        fail(f"{error} (--schema expects a SQLite database file)")


def diagnose_command(
    gold: str = typer.Option(..., "--gold", help="The gold (reference) SQL query."),
    pred: str = typer.Option(..., "--pred", help="The predicted SQL query to diagnose."),
    schema: Path | None = typer.Option(
        None,
        "--schema",
        help="A SQLite database whose schema resolves unqualified columns and double-quoted literals.",
    ),
    as_json: bool = json_option(),
) -> None:
    """Score a predicted SQL against a gold SQL: F_struct, F_lex, F, feature similarities, tags, feedback."""
    diagnosis = diagnose(pred, gold, _load_schema(schema))
    if as_json:
        typer.echo(json.dumps(diagnosis_record(diagnosis), indent=2))
    else:
        print_diagnosis(diagnosis)


def register(app: typer.Typer) -> None:
    add_command(app, "diagnose", diagnose_command)
