"""bench/_common.py's ``write_section``: a benchmark rewrites its own section of docs/benchmarks.md and
leaves the rest, the dated subsections written by hand under it included."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.conftest import REPO_ROOT

_SPEC = importlib.util.spec_from_file_location("bench_common", REPO_ROOT / "bench" / "_common.py")
assert _SPEC is not None
assert _SPEC.loader is not None
_COMMON = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_COMMON)
write_section = _COMMON.write_section


def test_the_section_is_replaced_and_the_dated_subsections_stay(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        "# Benchmarks\n\n## ODT\n\nold table\n\n### Round two (2026-12-05)\n\nkept figures\n\n## Environment\n\nenv\n",
        encoding="utf-8",
    )
    write_section(doc, "## ODT", "## ODT\n\nnew table\n")
    assert doc.read_text(encoding="utf-8") == (
        "# Benchmarks\n\n## ODT\n\nnew table\n\n### Round two (2026-12-05)\n\nkept figures\n\n## Environment\n\nenv\n"
    )


def test_a_subsection_the_new_text_holds_is_replaced_with_it(tmp_path: Path) -> None:
    doc = tmp_path / "audit.md"
    doc.write_text("## Results\n\nold\n\n### Examples per check\n\nold examples\n\n## Notes\n\nn\n", encoding="utf-8")
    write_section(doc, "## Results", "## Results\n\nnew\n\n### Examples per check\n\nnew examples\n")
    assert doc.read_text(encoding="utf-8") == (
        "## Results\n\nnew\n\n### Examples per check\n\nnew examples\n\n## Notes\n\nn\n"
    )


def test_a_missing_section_is_appended(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## ODT\n\nodt\n", encoding="utf-8")
    write_section(doc, "## Peers", "## Peers\n\npeers\n")
    assert doc.read_text(encoding="utf-8") == "# Benchmarks\n\n## ODT\n\nodt\n\n## Peers\n\npeers\n"
