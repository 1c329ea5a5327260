"""Resolve a GPU install set as a real install does, without installing, and summarise it.

Usage: python scripts/check_install_set.py NAME [--interpreter PATH] [--report out.json] [--wheels-only]

NAME names ``installsets/NAME.txt``, a pip requirements file with exact pins (the set a GPU machine
installs, with its target interpreter on a ``# python: X.Y`` line). Nothing is installed: the documented
command itself, ``pip install -r installsets/NAME.txt``, runs with ``--dry-run --report`` under an
interpreter of that version (``pythonX.Y`` on PATH or an installed pyenv version, or ``--interpreter``),
so pip sees what a GPU host of the same OS and architecture sees, source archives included: it prepares
their metadata (nothing is built into a wheel), as a real install would before building. This machine's
own pip configuration (local wheel folders, the CPU torch cap) is ignored. It needs the registry, so it
is run by hand, not in CI. Exit code 0 when the set resolves; the summary lists the versions that matter, the packages
that would be built from a source archive, and the number of packages.

``--wheels-only`` is for a machine without that interpreter: pip resolves for the file's Python and a
Linux x86_64 platform from wheels alone. It can differ from a real install: a package published only as
a source archive is then unavailable, and pip backtracks around it (verl's set resolved hydra-core
0.11.3 / omegaconf 1.4.1 that way, because antlr4-python3-runtime 4.9.3, which hydra-core 1.3 needs, has
no wheel; a real install gets hydra-core 1.3.8).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# pip takes one exact tag per --platform; a GPU host with glibc 2.31 (Ubuntu 20.04) or newer accepts all
# of these (llguidance, a vllm dependency, ships manylinux_2_31 only; torch's nccl manylinux_2_18 only).
LINUX_X86_64 = (
    *(f"manylinux_2_{minor}_x86_64" for minor in range(31, 4, -1)),
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
)
KEY_PACKAGES = (
    "torch",
    "vllm",
    "transformers",
    "flash-attn",
    "verl",
    "trl",
    "peft",
    "accelerate",
    "deepspeed",
    "skyrl",
    "skyrl-gym",
    "ray",
    "hydra-core",
    "omegaconf",
)


def _header(text: str, key: str, default: str) -> str:
    match = re.search(rf"^#\s*{key}:\s*(\S+)", text, flags=re.MULTILINE)
    return match.group(1) if match else default


def reports_version(interpreter: str, python: str) -> bool:
    """Whether ``interpreter`` runs and is Python ``python`` (a pyenv shim of an inactive version is not)."""
    try:
        result = subprocess.run(
            [interpreter, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
    except OSError:
        return False
    return result.returncode == 0 and result.stdout.strip() == python


def interpreter_for(python: str, given: str | None) -> str | None:
    """The interpreter that runs the real resolution: ``given``, else the first of ``python<X.Y>`` on
    PATH and pyenv's installed ``X.Y.*`` versions that runs as Python ``python``."""
    if given:
        return given
    candidates = [shutil.which(f"python{python}")]
    candidates += sorted(str(path) for path in Path.home().glob(f".pyenv/versions/{python}.*/bin/python{python}"))
    return next((c for c in candidates if c and reports_version(c, python)), None)


def pip_command(requirements: Path, target: Path, report: Path, *, interpreter: str, python: str | None) -> list[str]:
    """The dry-run of ``pip install -r requirements`` under ``interpreter``; with ``python`` (wheels
    only), for that Python version and Linux x86_64 platform tags instead of the interpreter's own.

    >>> cmd = pip_command(Path("set.txt"), Path("t"), Path("r.json"), interpreter="python3.12", python=None)
    >>> cmd[:6], "--only-binary=:all:" in cmd
    (['python3.12', '-m', 'pip', 'install', '--dry-run', '--ignore-installed'], False)
    >>> "--only-binary=:all:" in pip_command(Path("s"), Path("t"), Path("r"), interpreter="python3", python="3.12")
    True
    """
    command = [interpreter, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    command += ["--disable-pip-version-check", "--target", str(target), "--report", str(report)]
    if python is not None:
        command += ["--python-version", python, "--only-binary=:all:"]
        for tag in LINUX_X86_64:
            command += ["--platform", tag]
    return [*command, "-r", str(requirements)]


def summary(name: str, installed: list[dict], how: str) -> list[str]:
    """The lines printed for a resolved set: its size, the key versions, what comes from source archives.

    >>> wheel = {"metadata": {"name": "torch", "version": "2.11.0"}, "download_info": {"url": "x/torch.whl"}}
    >>> antlr = {"name": "antlr4_python3_runtime", "version": "4.9.3"}
    >>> sdist = {"metadata": antlr, "download_info": {"url": "x/antlr4-python3-runtime-4.9.3.tar.gz"}}
    >>> print("\\n".join(summary("demo", [wheel, sdist], "python 3.12")))
    install set demo: resolves for python 3.12 (2 packages)
      torch==2.11.0
      from source archives: antlr4-python3-runtime==4.9.3
    """
    versions = {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"] for item in installed}
    lines = [f"install set {name}: resolves for {how} ({len(versions)} packages)"]
    lines += [f"  {key}=={versions[key]}" for key in KEY_PACKAGES if key in versions]
    sources = sorted(
        f"{item['metadata']['name'].lower().replace('_', '-')}=={item['metadata']['version']}"
        for item in installed
        if not item["download_info"]["url"].endswith(".whl")
    )
    if sources:
        lines.append(f"  from source archives: {', '.join(sources)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="install set: installsets/NAME.txt")
    parser.add_argument("--interpreter", help="the interpreter to resolve with (default: python<X.Y> on PATH)")
    parser.add_argument("--wheels-only", action="store_true", help="resolve from wheels alone (may differ)")
    parser.add_argument("--report", type=Path, help="also keep pip's JSON report here")
    args = parser.parse_args(argv)

    requirements = ROOT / "installsets" / f"{args.name}.txt"
    if not requirements.is_file():
        known = sorted(p.stem for p in (ROOT / "installsets").glob("*.txt"))
        print(f"error: no install set {requirements} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    python = _header(requirements.read_text(), "python", "3.11")
    interpreter = sys.executable if args.wheels_only else interpreter_for(python, args.interpreter)
    if interpreter is None:
        print(
            f"error: install set {args.name} targets Python {python}: no python{python} on PATH or in pyenv; name one "
            "with --interpreter, or resolve from wheels alone with --wheels-only (which can differ from a real "
            "install)",
            file=sys.stderr,
        )
        return 2
    how = f"python {python}, linux x86_64, wheels only" if args.wheels_only else f"python {python} ({interpreter})"
    with tempfile.TemporaryDirectory() as scratch:
        report = args.report or Path(scratch) / "report.json"
        command = pip_command(
            requirements, Path(scratch) / "target", report, interpreter=interpreter,
            python=python if args.wheels_only else None,
        )  # fmt: skip
        # The machine's pip config points at local wheel folders and caps torch: ignore both.
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_CONSTRAINT": "", "PIP_FIND_LINKS": ""}
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            print(result.stdout + result.stderr, file=sys.stderr)
            print(f"install set {args.name}: does NOT resolve ({how})", file=sys.stderr)
            return 1
        installed = json.loads(report.read_text())["install"]
    print("\n".join(summary(args.name, installed, how)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
