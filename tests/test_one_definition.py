"""One place per concept, checked over the package's source: no class name is defined twice, the
database-introspection records live only in :mod:`progress_sql.data.introspect`, and every
Markdown document the sources name ships with the repository."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE = REPO_ROOT / "src" / "progress_sql"
INTROSPECT = PACKAGE / "data" / "introspect.py"

#: Class names of database-introspection records (a column, a table, a key, a database read from a file).
_RECORD_NAME = re.compile(r"(Column|Table|ForeignKey|PrimaryKey|Database|Schema)(Info|Profile|Record)?\Z")
#: Classes with those names that are not introspection records, and where they live.
_NOT_RECORDS = {"Schema": PACKAGE / "data" / "schema.py"}  # names only, built from a profile

#: Markdown files the package writes into users' run folders (not documents of the repository).
_WRITTEN_FILES = {"report.md", "review.md"}  # review.md: progress-sql inspect --sample
_MARKDOWN = re.compile(r"[\w./-]*\w\.md\b")
_TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".md", ".txt", ".toml", ".json"}


def _classes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    return found


def test_no_class_name_is_defined_twice() -> None:
    twice = {name: places for name, places in _classes().items() if len(places) > 1}
    assert not twice, f"class names defined more than once: {twice}"


def test_introspection_records_are_defined_only_in_data_introspect() -> None:
    records = {name: places for name, places in _classes().items() if _RECORD_NAME.match(name)}
    assert {"ColumnInfo", "ForeignKey", "TableInfo", "DatabaseProfile"} <= set(records)
    introspect = str(INTROSPECT.relative_to(REPO_ROOT))
    elsewhere = {
        name: places
        for name, places in records.items()
        for place in places
        if not place.startswith(introspect + ":")
        and not (name in _NOT_RECORDS and place.startswith(str(_NOT_RECORDS[name].relative_to(REPO_ROOT)) + ":"))
    }
    assert not elsewhere, f"introspection records outside data/introspect.py: {elsewhere}"


def _named_documents() -> list[tuple[Path, str]]:
    named = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in _TEXT_SUFFIXES:
            named.extend((path, name) for name in _MARKDOWN.findall(path.read_text(encoding="utf-8")))
    return named


def _ships(source: Path, name: str) -> bool:
    """A name resolves from the repository root, its docs/ folder, or the naming file's folder."""
    return any((base / name).is_file() for base in (REPO_ROOT, REPO_ROOT / "docs", source.parent))


def test_every_markdown_document_named_in_the_sources_ships() -> None:
    named = _named_documents()
    assert any(name == "docs/semantics.md" for _, name in named)  # the scan sees the references
    missing = sorted(
        f"{source.relative_to(REPO_ROOT)}: {name}"
        for source, name in named
        if name not in _WRITTEN_FILES and not _ships(source, name)
    )
    assert not missing, f"documents named but not in the repository: {missing}"
