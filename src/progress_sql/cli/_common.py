"""Helpers shared by subcommands: error reporting and consoles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error that says what to fix on stderr and exit non-zero."""
    stderr.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def versions() -> dict[str, str]:
    """Versions that decide results, recorded in every summary.json."""
    import platform
    import sqlite3

    import sqlglot

    from progress_sql import __version__

    return {
        "progress_sql": __version__,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "sqlglot": str(getattr(sqlglot, "__version__", "unknown")),
    }


def write_json(path: Path, data: Any) -> None:
    """Write pretty JSON (UTF-8, trailing newline)."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
