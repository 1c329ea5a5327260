"""NeMo Gym's ``bird_sql`` resource server scoring one workload of bench/peers.py, run by the nemo_gym side
environment's Python (scripts/side_venv.sh nemo_gym: nemo-gym 0.7.0). The server class is the vendored
``app.py`` of NVIDIA-NeMo/Gym (bench/peers/README.md), built as its own tests build it (a config, a mock
server client, the database folder given instead of downloaded); every trajectory's final answer goes
through its ``verify`` coroutine at once, as concurrent HTTP requests would: its extraction, its
semaphore of 32, its 30 s ``asyncio.wait_for`` over a thread. The HTTP layer is not started.

    python nemo_gym_runner.py WORKLOAD.json RESULTS.jsonl
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from unittest.mock import MagicMock

HERE = Path(__file__).resolve().parent


def import_server(folder: Path) -> object:
    """The vendored ``resources_servers.bird_sql.app`` module, copied under ``folder`` as a package."""
    package = folder / "resources_servers" / "bird_sql"
    package.mkdir(parents=True)
    for name in ("app", "eval_utils", "setup_bird_sql"):
        shutil.copy(HERE / "nemo_gym_bird_sql" / f"{name}.py.txt", package / f"{name}.py")
    (package / "__init__.py").write_text("", encoding="utf-8")
    sys.path.insert(0, str(folder))
    import resources_servers.bird_sql.app as app

    return app


def main(workload_file: str, results_file: str) -> int:
    workload = json.loads(Path(workload_file).read_text(encoding="utf-8"))
    from nemo_gym.openai_utils import (
        NeMoGymResponse,
        NeMoGymResponseCreateParamsNonStreaming,
        NeMoGymResponseOutputMessage,
        NeMoGymResponseOutputText,
    )
    from nemo_gym.server_utils import ServerClient

    app = import_server(Path(tempfile.mkdtemp(prefix="nemo_gym_bird_sql_")))
    app.ensure_bird_sql = lambda _path: Path(workload["db_root"])  # as its tests do: no download
    config = app.BirdSqlResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", bird_sql_dir=workload["db_root"])
    server = app.BirdSqlResourcesServer(config=config, server_client=MagicMock(spec=ServerClient))

    def request(trajectory: dict) -> object:
        text = f"<think>scripted</think>\n```sql\n{trajectory['turns'][-1]}\n```"
        message = NeMoGymResponseOutputMessage(
            id="msg",
            content=[NeMoGymResponseOutputText(annotations=[], text=text, type="output_text")],
            role="assistant",
            status="completed",
            type="message",
        )
        response = NeMoGymResponse(
            id="r", created_at=0.0, model="m", object="response", output=[message],
            parallel_tool_calls=True, tool_choice="auto", tools=[],
        )  # fmt: skip
        return app.BirdSqlVerifyRequest(
            responses_create_params=NeMoGymResponseCreateParamsNonStreaming(input=[]),
            response=response,
            question=trajectory["question"],
            gt_sql=trajectory["gold"],
            db_id=trajectory["db_id"],
            id=trajectory["id"],
        )

    requests = [request(t) for t in workload["trajectories"]]
    out = open(results_file, "a", encoding="utf-8")  # noqa: SIM115  # closed by os._exit's flush below

    out.write(json.dumps({"start": True}) + "\n")
    out.flush()

    async def score_all() -> None:
        began = time.perf_counter()

        async def one(trajectory: dict, body: object) -> None:
            verified = await server.verify(body)
            record = {"id": trajectory["id"], "done_s": time.perf_counter() - began, "reward": verified.reward,
                      "queries": 2}  # fmt: skip
            out.write(json.dumps(record) + "\n")
            out.flush()

        await asyncio.gather(*(one(t, b) for t, b in zip(workload["trajectories"], requests, strict=True)))

    loop = asyncio.new_event_loop()
    loop.run_until_complete(score_all())
    out.close()
    # Threads of queries past their 30 s wait may still run: the verdicts are in, do not wait for them
    # (asyncio's executor shutdown would); the bench reports the CPU they burn until then.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
