"""One place per concept, checked over the package's source: no class name is defined twice, the
database-introspection records live only in :mod:`progress_sql.data.introspect`, every Markdown
document the sources name ships with the repository, and no document (README.md, docs/) names a file
outside the repository."""

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
#: Documents of other repositories that a source cites by their path there, with the repository.
_CITED = {"docs/source/lora_without_regret.md"}  # TRL's "LoRA Without Regret" guide (training/recipe.py)
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
        if name not in _WRITTEN_FILES | _CITED and not _ships(source, name)
    )
    assert not missing, f"documents named but not in the repository: {missing}"


#: The documents a user's clone reads.
DOCUMENTS = (REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")))
#: A path that leaves the repository: one that climbs out of it (``../``), or an absolute path of this
#: project's machines (the workspace ``/work/``, home folders). A reader's own places are examples and
#: pass: ``~/data/spider``, ``$HOME/...``, a cluster's ``/shared/...``, ``/tmp/...``.
_OUTSIDE = re.compile(r"(?<![\w.~$/-])(?:\.\./|/work/|/root/|/home/)[^\s`'\"()\[\]<>,;]*")
#: Markdown link targets: a relative one resolves from the document's folder, any other path from the
#: repository root (where the documents' commands run).
_LINK = re.compile(r"\]\(([^)\s]+)\)")
#: Paths outside the repository that a document may name: (document, prefix) -> why.
_RECORDS = {
    ("docs/benchmarks.md", "../shared/data"): "benchmark records: commands as they ran on the project's "
    "copies of the benchmark data (the page says so at its top; a record of a measurement stays as run)",
    ("docs/benchmarks.md", "/work/"): "benchmark records: the official evaluator's checkout a comparison ran "
    "against, a diagnostic script marked not committed (said at the page's top)",
    ("docs/training.md", "/root/.pyenv/"): "recorded output of scripts/check_install_set.py: the interpreter "
    "each install set resolved under",
    ("docs/training.md", "/root/out/"): "a recorded output line of scripts/gpu_check.sh on the lent GPU "
    "machine, whose $OUT folder is /root/out",
}


def _outside_paths(document: Path, text: str) -> list[str]:
    """The paths in ``text`` that name a place outside the repository."""
    links = set(_LINK.findall(text))
    found = []
    for path in _OUTSIDE.findall(text):
        if path.startswith("../"):
            base = document.parent if path in links else REPO_ROOT
            if (base / path).resolve().is_relative_to(REPO_ROOT):
                continue
        found.append(path)
    return found


def test_the_outside_path_scan_sees_what_it_must() -> None:
    readme = REPO_ROOT / "README.md"
    text = (
        "see `../shared/docs/odt-defaults.md`; run --data-dir ../shared/data/spider or /work/exp/x.py;"
        " /root/out/a.json, (/home/me/data); [up](../x.md)"
    )
    assert _outside_paths(readme, text) == [
        "../shared/docs/odt-defaults.md", "../shared/data/spider", "/work/exp/x.py", "/root/out/a.json",
        "/home/me/data", "../x.md",
    ]  # fmt: skip
    fine = "~/data/spider $HOME/models /shared/spider /tmp/pg .../trajectory_staleness https://h.org/home/a"
    assert _outside_paths(readme, fine) == []
    assert _outside_paths(REPO_ROOT / "docs" / "odt.md", "[readme](../README.md)") == []


def test_no_document_names_a_path_outside_the_repository() -> None:
    """Done when of issue 32: a user's clone has no ``../shared`` and no ``/work/``; the documents'
    reasons and commands live in the repository, with the records of _RECORDS as the only exceptions."""
    outside = sorted(
        f"{document.relative_to(REPO_ROOT)}: {path}"
        for document in DOCUMENTS
        for path in _outside_paths(document, document.read_text(encoding="utf-8"))
        if not any(
            name == document.relative_to(REPO_ROOT).as_posix() and path.startswith(prefix) for name, prefix in _RECORDS
        )
    )
    assert not outside, f"documents name paths outside the repository (use ~/data/... or bring it in): {outside}"
