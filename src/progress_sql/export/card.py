"""The Hugging Face dataset card of an export folder (docs/export.md#the-dataset-card).

A dataset repository on the Hub is a folder with its files and a ``README.md`` whose YAML front matter
the Hub reads (licence, task, source datasets, size, which file is which split). ``export`` writes one
beside its file: :func:`exported_file` reads a manifest into an :class:`ExportedFile`,
:func:`dataset_card_text` (pure) builds the card of every export in the folder, validated through
``huggingface_hub``'s own ``DatasetCardData``, and :func:`write_dataset_card` is the I/O edge, which
never overwrites a ``README.md`` that an export did not write.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.errors import DatasetError
from progress_sql.jsonio import read_json

#: What every card an export writes contains: a ``README.md`` without it is someone else's and stays.
CARD_MARKER = "<!-- dataset card written by progress-sql export -->"
CARD_FILE = "README.md"
#: Licence ids whose data obliges a derived dataset to the same licence (share-alike).
SHARE_ALIKE = frozenset({"cc-by-sa-4.0"})
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


@dataclass(frozen=True, slots=True)
class ExportedFile:
    """One export as its manifest records it: the file, its rows per source and each source's licence,
    the filter, the leakage guard's decision, the versions it was written with."""

    name: str
    format: str
    rows: int
    per_source: Mapping[str, int]
    unverified: Mapping[str, int]
    licences: Mapping[str, str]
    filter: str
    dropped: int
    schema_profile: str
    leakage: str
    overlaps: int
    evaluation_files: int
    export_version: int
    versions: Mapping[str, str]

    @property
    def split(self) -> str:
        """The file's split name on the Hub: its stem as a word (``train.parquet`` -> ``train``)."""
        return re.sub(r"\W+", "_", Path(self.name).stem).strip("_") or "train"


def exported_file(manifest: Mapping[str, Any]) -> ExportedFile:
    """The :class:`ExportedFile` of an export's manifest (``<stem>.manifest.json``)."""
    source = manifest.get("source") or {}
    leakage = source.get("leakage") or {}
    per_source = {str(k): int(v) for k, v in (manifest.get("per_source") or {}).items()}
    licences = {str(k): str(v) for k, v in (source.get("licences") or {}).items()}
    return ExportedFile(
        name=Path(str(manifest["path"])).name,
        format=str(manifest["format"]),
        rows=int(manifest["rows"]),
        per_source=per_source,
        unverified={str(k): int(v) for k, v in (manifest.get("unverified") or {}).items()},
        licences={name: licences.get(name, "unknown") for name in per_source},
        filter=str(manifest.get("filter", "none")),
        dropped=int(manifest.get("dropped", 0)),
        schema_profile=str((manifest.get("settings") or {}).get("schema_profile", "full")),
        leakage=str(leakage.get("decision", "not recorded")),
        overlaps=len(leakage.get("overlaps") or ()),
        evaluation_files=len(leakage.get("evaluation_files") or ()),
        export_version=int(manifest.get("export_version", 0)),
        versions={str(k): str(v) for k, v in (manifest.get("versions") or {}).items()},
    )


def dataset_licence(licences: Sequence[str]) -> str | list[str]:
    """The licence of a dataset built from data under ``licences``: a share-alike licence binds the whole
    derived file (CC BY-SA 4.0 for Spider and BIRD rows); otherwise every distinct licence, one id when
    there is one."""
    distinct = sorted(set(licences)) or ["unknown"]
    binding = sorted(set(distinct) & SHARE_ALIKE)
    if len(binding) == 1 and set(distinct) - {"unknown"} <= set(binding):
        return binding[0] if "unknown" not in distinct else [binding[0], "unknown"]
    return distinct[0] if len(distinct) == 1 else distinct


def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` value for ``rows`` rows."""
    return next((name for bound, name in _SIZES if rows < bound), "1M<n<10M")


def dataset_card_text(files: Sequence[ExportedFile], *, title: str) -> str:
    """The ``README.md`` of a folder holding ``files``: YAML front matter (licence, task, sources, size,
    one split per file) validated by ``huggingface_hub.DatasetCardData``, then what each file holds."""
    from huggingface_hub import DatasetCard, DatasetCardData

    ordered = sorted(files, key=lambda f: f.name)
    licences = [licence for f in ordered for licence in f.licences.values()]
    sources = sorted({name for f in ordered for name in f.per_source})
    configs: dict[str, list[dict[str, str]]] = {}
    for f in ordered:
        configs.setdefault(f.format, []).append({"split": f.split, "path": f.name})
    data = DatasetCardData(
        license=dataset_licence(licences),
        language=["en"],
        task_categories=["text-generation"],
        size_categories=[size_category(sum(f.rows for f in ordered))],
        source_datasets=sources,
        pretty_name=title,
        tags=["text-to-sql", "sql", "reinforcement-learning", "progress-sql", *sorted(configs)],
        configs=[{"config_name": name, "data_files": parts} for name, parts in configs.items()],
        progress_sql={
            "leakage": {f.name: f.leakage for f in ordered},
            "filter": {f.name: f.filter for f in ordered},
            "export_version": max(f.export_version for f in ordered),
        },
    )
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{_body(ordered, title)}"))


def _body(files: Sequence[ExportedFile], title: str) -> str:
    rows = [
        f"| `{f.name}` | {f.format} | {f.rows} | "
        + ", ".join(f"{name} ({n}, {f.licences.get(name, 'unknown')})" for name, n in sorted(f.per_source.items()))
        + f" | {f.filter} ({f.dropped} dropped) | {f.leakage} |"
        for f in files
    ]
    unverified = [f"`{f.name}`: {sum(f.unverified.values())}" for f in files if sum(f.unverified.values())]
    versions = files[-1].versions
    lines = [
        CARD_MARKER,
        f"# {title}",
        "",
        "Text-to-SQL training rows written by `progress-sql export` for multi-turn RL (Progress-SQL): each row "
        "holds the opening prompt (system prompt and question with its database schema), the gold SQL and the "
        "database path; the environment executes a policy's SQL against it and answers with clause-level "
        "feedback. The row shapes of each format are in progress-sql's docs/export.md.",
        "",
        "| file | format | rows | sources (rows, licence) | gold-audit filter | leakage guard |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "## Licence",
        "",
        _licence_text(files),
        "",
        "## Leakage guard",
        "",
        "Before writing, the training examples pass progress-sql's leakage guard: an example is refused when its "
        f"database is one an evaluation task ({', '.join(_evaluation_tasks())}) uses, by name or by schema "
        "fingerprint, among the evaluation questions files the guard found and read.",
        "",
        *(f"- `{f.name}`: {_leakage_words(f)}" for f in files),
        "",
        "## Provenance",
        "",
        f"Export version {files[-1].export_version}; schema profile "
        + ", ".join(sorted({f.schema_profile for f in files}))
        + "; written with "
        + ", ".join(f"{name} {version}" for name, version in sorted(versions.items()))
        + ". Each file's `<stem>.manifest.json` beside it records how its rows were chosen (the task or the "
        "mixture spec with the counts drawn), the filter and the leakage guard's full decision.",
        *(
            [
                "",
                "Rows whose database was absent at export time are marked `verified: false` ("
                + "; ".join(unverified)
                + "): put the database at `db_path` before training on them.",
            ]
            if unverified
            else []
        ),
        "",
    ]
    return "\n".join(lines)


def _licence_text(files: Sequence[ExportedFile]) -> str:
    licences = sorted({licence for f in files for licence in f.licences.values()})
    text = (
        "Spider and BIRD are licensed under CC BY-SA 4.0 "
        "(<https://creativecommons.org/licenses/by-sa/4.0/>); rows derived from them (questions, gold SQL, "
        "schemas) are shared under the same licence."
    )
    if "unknown" in licences:
        unknown = sorted({name for f in files for name, lic in f.licences.items() if lic == "unknown"})
        text += (
            " progress-sql records no licence for "
            + ", ".join(unknown)
            + ": the licence is unknown here; check the source release's own terms before publishing."
        )
    return text


def _leakage_words(f: ExportedFile) -> str:
    if f.leakage == "clean" and f.evaluation_files == 0:
        return (
            "clean against nothing: no evaluation questions file was found beside the data (give "
            "`--eval-data-dir`), so no evaluation set was checked"
        )
    if f.leakage == "clean":
        return f"clean (no training database is an evaluation database; {f.evaluation_files} evaluation files read)"
    if f.leakage == "allowed":
        return (
            f"**allowed** with `--allow-eval-overlap`: {f.overlaps} overlaps with evaluation databases; do not "
            "evaluate a model trained on these rows on the overlapping evaluation sets"
        )
    return f.leakage


def _evaluation_tasks() -> list[str]:
    from progress_sql.data.tasks import TASKS

    return [name for name, task in TASKS.items() if task.evaluation]


def folder_exports(folder: Path) -> list[ExportedFile]:
    """Every export whose manifest lies in ``folder`` (several exports often share one: train, validation)."""
    files = []
    for path in sorted(folder.glob("*.manifest.json")):
        try:
            manifest = read_json(path, "export manifest")
        except DatasetError:  # not an export's manifest: skipped
            continue
        named = folder / Path(str(manifest.get("path", ""))).name if isinstance(manifest, dict) else folder
        if isinstance(manifest, dict) and manifest.get("command") == "export" and named.is_file():
            files.append(exported_file(manifest))
    return files


def card_plan(folder: Path) -> dict[str, Any]:
    """Whether an export into ``folder`` writes its card, for the manifest: ``path``, ``written`` and,
    when not, the ``reason`` (a ``README.md`` an export did not write stays; no ``huggingface_hub``)."""
    card = folder / CARD_FILE
    if card.is_file() and CARD_MARKER not in card.read_text(encoding="utf-8", errors="replace"):
        return {"path": str(card), "written": False, "reason": "a README.md not written by an export is there"}
    if importlib.util.find_spec("huggingface_hub") is None:
        reason = "huggingface_hub is not installed (the [export] extra brings it)"
        return {"path": str(card), "written": False, "reason": reason}
    return {"path": str(card), "written": True}


def write_dataset_card(folder: Path) -> Path:
    """Write the dataset card of ``folder``'s exports (every ``*.manifest.json`` of an export whose file is
    there) to its ``README.md``; call it when :func:`card_plan` says ``written``."""
    card = folder / CARD_FILE
    card.write_text(dataset_card_text(folder_exports(folder), title=f"progress-sql export: {folder.name}"),
                    encoding="utf-8")  # fmt: skip
    return card
