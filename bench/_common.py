"""What every benchmark script shares: timing, the machine's description and docs/benchmarks.md."""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import sqlglot

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_DOC = ROOT / "docs" / "benchmarks.md"
DOC_HEADER = (
    "# Benchmarks\n\n"
    "Benchmarks: each figure with the command that produced it; medians of repeats on the project's 2-core "
    "machine, ratios against a baseline measured in the same run.\n"
)


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    """The median wall time of ``repeat`` calls of ``run``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine() -> dict[str, str]:
    """The facts that make a figure comparable: cores, versions, load."""
    parser_file = getattr(sqlglot.parser, "__file__", "") or ""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "nproc": str(os.cpu_count()),
        "python": platform.python_version(),
        "sqlglot": metadata.version("sqlglot"),
        "sqlglotc compiled parser": "active" if parser_file.endswith(".so") else "not active (pure Python)",
        "platform": platform.platform(),
        "load average at start": " / ".join(f"{value:.2f}" for value in load) if load else "n/a",
    }


def write_section(doc: Path, title: str, section: str) -> None:
    """Replace (or append) the section headed ``title`` (e.g. "## ODT") of ``doc``; create the file;
    say where it went. What the section replaces ends at the next ``## `` heading or at the first
    ``### `` heading the new text does not hold itself: the dated subsections written by hand under
    a benchmark's section (earlier figures, with their commands) stay."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else DOC_HEADER
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == title), None)
    if start is None:
        new_text = text.rstrip("\n") + "\n\n" + section
    else:
        own = {line.strip() for line in section.splitlines() if line.startswith("### ")}
        end = next(
            (
                i
                for i in range(start + 1, len(lines))
                if lines[i].startswith("## ") or (lines[i].startswith("### ") and lines[i].strip() not in own)
            ),
            len(lines),
        )
        new_text = "\n".join([*lines[:start], *section.rstrip("\n").splitlines(), "", *lines[end:]]).rstrip("\n") + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(new_text if new_text.endswith("\n") else new_text + "\n", encoding="utf-8")
    print(f"recorded in {doc}")


def provenance(command: str, info: dict[str, str]) -> list[str]:
    """The lines every recorded section starts with: command, date and machine."""
    return [
        f"Command: `{command}`  ",
        f"Date: {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC  ",
        "Machine: " + ", ".join(f"{key} {value}" for key, value in info.items()),
    ]


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """The options every benchmark shares: the data folder, the document it records into, and --no-doc."""
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC)
    parser.add_argument("--no-doc", action="store_true")


def spider_dev_missing(data_dir: Path) -> bool:
    """True (with a message on stderr) when ``data_dir`` lacks Spider dev (the shared data)."""
    if (data_dir / "spider" / "dev.json").is_file():
        return False
    print(f"error: {data_dir}/spider/dev.json not found (this benchmark needs ../shared/data)", file=sys.stderr)
    return True


def command_line(script: str, argv: Sequence[str] | None) -> str:
    """How the benchmark was run, as recorded beside its figures."""
    return shlex.join([".venv/bin/python", script, *(sys.argv[1:] if argv is None else argv)])
