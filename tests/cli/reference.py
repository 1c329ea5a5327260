"""The option reference of docs/cli.md, generated from the command objects (what ``--help`` shows).
Dev tooling (not part of the package); run from the repository root.

docs/cli.md holds hand-written conventions and, between :data:`BEGIN` and :data:`END`, the text
:func:`options_reference` returns; a test fails when the two drift apart. Regenerate with::

    python -m tests.cli.reference docs/cli.md
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer.main

BEGIN = "<!-- BEGIN GENERATED: python -m tests.cli.reference docs/cli.md -->"
END = "<!-- END GENERATED -->"


def commands() -> dict[str, Any]:
    """The subcommands of ``progress-sql`` by name, in alphabetical order (click-style command
    objects: typer builds them on its own copy of click, so they are read by attribute)."""
    from progress_sql.cli import app

    group: Any = typer.main.get_command(app)
    return dict(sorted(group.commands.items()))


def is_option(param: Any) -> bool:
    return bool(param.param_type_name == "option")


def visible_options(command: Any) -> list[Any]:
    """The options ``--help`` shows (hidden ones, such as deprecated aliases, left out)."""
    return [p for p in command.params if is_option(p) and not p.hidden]


def _default(param: Any) -> str:
    if param.required:
        return "required"
    value: Any = param.default
    if is_option(param) and param.is_flag:
        if param.secondary_opts:
            return f"`{param.opts[0] if value else param.secondary_opts[0]}`"
        return "on" if value else "off"
    if value is None or value == () or value == []:
        return "-"
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "\\<")


def options_reference() -> str:
    """One section per subcommand: its summary line and a table of its visible options."""
    lines: list[str] = []
    for name, command in commands().items():
        summary = _cell((command.help or "").strip().split("\n\n")[0])
        lines += [f"### `progress-sql {name}`", "", summary, "", "| option | default | meaning |", "|---|---|---|"]
        for param in command.params:
            if is_option(param) and param.hidden:
                continue
            if not is_option(param):
                shown = f"`{param.name.upper() if param.name else '?'}` (argument)"
                meaning = getattr(param, "help", None) or ""
            else:
                shown = " / ".join(f"`{opt}`" for opt in (*param.opts, *param.secondary_opts))
                meaning = param.help or ""
            lines.append(f"| {shown} | {_cell(_default(param))} | {_cell(meaning)} |")
        lines.append("")
    return "\n".join(lines)


def splice(document: str) -> str:
    """``document`` with the generated part replaced by the current reference."""
    head, begin, rest = document.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the document lacks the markers {BEGIN!r} ... {END!r}")
    return f"{head}{BEGIN}\n\n{options_reference()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else Path("docs/cli.md")
    path.write_text(splice(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
