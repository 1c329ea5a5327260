"""Real servers for the OpenEnv tests: OpenEnv's app run by uvicorn in a process of its own, on a free
port, started the way docs/openenv.md starts it, and stopped (by its own process id) afterwards."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
#: Seconds a server may take to answer /health: the first import of fastapi and gradio on a loaded machine.
START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def child_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's variables with src/ on PYTHONPATH (progress-sql is not installed in the side
    environment) and the side environment's bin/ first on PATH (so ``uvicorn`` is its uvicorn)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
    env.update(extra)
    return env


def wait_until_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            if requests.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.2)
    raise RuntimeError(
        f"the server did not answer /health within {START_TIMEOUT_S} s:\n{log.read_text(errors='replace')}"
    )


def start(
    command: Sequence[str] | str, *, port: int, env: Mapping[str, str], cwd: Path, log: Path
) -> subprocess.Popen[bytes]:
    """Run ``command`` (argv, or a bash script) and wait until ``http://127.0.0.1:port`` is healthy."""
    argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
    with log.open("wb") as out:
        # a session of its own, so stopping it stops uvicorn and nothing else
        process = subprocess.Popen(argv, cwd=cwd, env=child_environment(env), stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # fmt: skip
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}", log)
    except BaseException:
        stop(process)
        raise
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
