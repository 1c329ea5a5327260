"""Real servers for the OpenEnv tests on free ports: OpenEnv's app run by uvicorn in a thread of the test
process (:func:`in_process`), or by a command in a process of its own, started the way docs/openenv.md
starts it and stopped (by its own process id) afterwards (:func:`start`)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import requests
import uvicorn

ROOT = Path(__file__).resolve().parents[2]
#: Seconds a server process may take to answer /health: openenv imports gradio, which took two minutes
#: on the shared two-core machine under load (4.7 s of CPU).
START_TIMEOUT_S = 600.0


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


@contextlib.contextmanager
def in_process(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free port of 127.0.0.1 from a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
