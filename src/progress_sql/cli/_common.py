"""Helpers shared by subcommands: error reporting and consoles."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error that says what to fix on stderr and exit non-zero."""
    stderr.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)
