"""The run explorer: one self-contained HTML page of a run folder (``eval``, ``rollout``, ``train``,
``audit``, ``ablate``) or of two eval runs side by side; docs/view.md.

``model`` reads a run folder into the page's data (only what the folder holds), ``page`` renders it
with the script and styles of ``assets/``, ``context`` is what ``eval`` and ``rollout`` add to their
folder for the example view (questions, gold SQL, schema excerpts, first result rows)."""

from __future__ import annotations

from pathlib import Path

from progress_sql.view.model import Page, compare_page, read_run
from progress_sql.view.page import PAGE_FILE, render, write_page


def write_run_page(run: Path, out: Path | None = None) -> Path:
    """Build the page of run folder ``run`` and write it to ``out`` (default ``run/view.html``);
    returns the path. DatasetError: the folder is not one the page reads, or is incomplete."""
    return write_page(read_run(run), out if out is not None else run / PAGE_FILE)


__all__ = ["PAGE_FILE", "Page", "compare_page", "read_run", "render", "write_page", "write_run_page"]
