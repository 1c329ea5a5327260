"""bench/_common.py's ``write_section``: a benchmark rewrites its own section of docs/benchmarks.md and
leaves the rest, the dated subsections written by hand under it included."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

_SPEC = importlib.util.spec_from_file_location("bench_common", REPO_ROOT / "bench" / "_common.py")
assert _SPEC is not None
assert _SPEC.loader is not None
_COMMON = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_COMMON)
write_section = _COMMON.write_section


CASES = {
    "the section is replaced, the dated subsections under it stay": (
        "# Benchmarks\n\n## ODT\n\nold table\n\n### Round two (2026-12-05)\n\nkept figures\n\n## Environment\n\nenv\n",
        "## ODT",
        "## ODT\n\nnew table\n",
        "# Benchmarks\n\n## ODT\n\nnew table\n\n### Round two (2026-12-05)\n\nkept figures\n\n## Environment\n\nenv\n",
    ),
    "a subsection the new text holds is replaced with it": (
        "## Results\n\nold\n\n### Examples per check\n\nold examples\n\n## Notes\n\nn\n",
        "## Results",
        "## Results\n\nnew\n\n### Examples per check\n\nnew examples\n",
        "## Results\n\nnew\n\n### Examples per check\n\nnew examples\n\n## Notes\n\nn\n",
    ),
    "a missing section is appended": (
        "# Benchmarks\n\n## ODT\n\nodt\n",
        "## Peers",
        "## Peers\n\npeers\n",
        "# Benchmarks\n\n## ODT\n\nodt\n\n## Peers\n\npeers\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_write_section(case: str, tmp_path: Path) -> None:
    before, title, section, after = CASES[case]
    doc = tmp_path / "benchmarks.md"
    doc.write_text(before, encoding="utf-8")
    write_section(doc, title, section)
    assert doc.read_text(encoding="utf-8") == after
