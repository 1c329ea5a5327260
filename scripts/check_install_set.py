"""Resolve a GPU install set against the package registry, metadata only, and summarise it.

Usage: python scripts/check_install_set.py NAME [--python 3.12] [--report out.json]

NAME names ``installsets/NAME.txt``, a pip requirements file with exact pins (the set a
GPU machine installs). Nothing is installed: pip resolves the set for a Linux x86_64 GPU
host with ``--dry-run --report`` (wheels only, so no package is built here), ignoring this
machine's own pip configuration (local wheel folders, the CPU torch cap). The lines
``# python: X.Y`` and ``# platform: TAG`` in the file pick the target interpreter and
wheel platform. Run by hand, not in CI: it needs the registry. Exit code 0 when the set
resolves; the summary lists the versions that matter and the number of packages.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# pip takes one exact tag per --platform; a GPU host with glibc 2.35 (Ubuntu 22.04, CUDA 13 images)
# accepts all of these. Every glibc minor is listed: some wheels carry only one, e.g. nvidia-nccl-cu13
# 2.28.9 (torch 2.11) only 2_18 and llguidance 1.7 (vLLM 0.24) only 2_31.
LINUX_X86_64 = (
    *(f"manylinux_2_{minor}_x86_64" for minor in range(35, 4, -1)),
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
)


def _header(text: str, key: str, default: str) -> str:
    match = re.search(rf"^#\s*{key}:\s*(\S+)", text, flags=re.MULTILINE)
    return match.group(1) if match else default


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="install set: installsets/NAME.txt")
    parser.add_argument("--python", help="target Python (default: the file's '# python:' line)")
    parser.add_argument("--report", type=Path, help="also keep pip's JSON report here")
    args = parser.parse_args(argv)

    requirements = ROOT / "installsets" / f"{args.name}.txt"
    if not requirements.is_file():
        known = sorted(p.stem for p in (ROOT / "installsets").glob("*.txt"))
        print(f"error: no install set {requirements} (known: {', '.join(known)})", file=sys.stderr)
        return 2
    text = requirements.read_text()
    python = args.python or _header(text, "python", "3.11")
    platforms = [_header(text, "platform", "")] if _header(text, "platform", "") else LINUX_X86_64

    with tempfile.TemporaryDirectory() as scratch:
        report = args.report or Path(scratch) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed"]
        command += ["--quiet", "--target", str(Path(scratch) / "target"), "--report", str(report)]
        command += ["--python-version", python, "--only-binary=:all:"]
        for tag in platforms:
            command += ["--platform", tag]
        command += ["-r", str(requirements)]
        # The machine's pip config points at local wheel folders and caps torch: ignore both.
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_CONSTRAINT": "", "PIP_FIND_LINKS": ""}
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            print(result.stdout + result.stderr, file=sys.stderr)
            print(f"install set {args.name}: does NOT resolve (python {python})", file=sys.stderr)
            return 1
        installed = json.loads(report.read_text())["install"]

    versions = {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"] for item in installed}
    print(f"install set {args.name}: resolves for python {python}, linux x86_64 ({len(versions)} packages)")
    for name in KEY_PACKAGES:
        if name in versions:
            print(f"  {name}=={versions[name]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
