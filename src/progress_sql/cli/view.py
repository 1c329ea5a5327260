"""``progress-sql view RUN_DIR [RUN_DIR2]``: the run explorer, one self-contained HTML page of a run
folder, or of two eval runs side by side (docs/view.md)."""

from __future__ import annotations

import json
import webbrowser
from pathlib import Path

import typer

from progress_sql.cli import _common as common
from progress_sql.view import PAGE_FILE, compare_page, write_page, write_run_page


def view_command(
    run: Path = typer.Argument(..., help="A run folder of eval, rollout, train, audit or ablate."),
    other: Path | None = typer.Argument(
        None, help="A second eval run folder: the page compares the two (as compare-runs does)."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help=f"Output file: the HTML page (default: RUN_DIR/{PAGE_FILE}; with two runs, RUN_DIR2/compare.html).",
    ),
    open_page: bool = typer.Option(False, "--open", help="Open the page in the default web browser."),
    as_json: bool = common.json_option(),
) -> None:
    """Write the run explorer: one self-contained HTML page of a run folder (or two eval runs compared)."""
    if other is None:
        path = write_run_page(run, out)
    else:
        from progress_sql.runs.compare import compare

        for folder in (run, other):
            if not folder.is_dir():
                common.fail(f"run folder not found: {folder}")
        path = write_page(compare_page(run, other, compare(run, other)), out or other / "compare.html")
    if as_json:
        typer.echo(json.dumps({"page": str(path)}))
    else:
        common.stdout.print(f"page: {path}")
    if open_page:
        webbrowser.open(path.resolve().as_uri())


def register(app: typer.Typer) -> None:
    common.add_command(app, "view", view_command)
