"""One training process of tests/integrations/test_trl_ranks.py, started by ``torch.distributed.run``
(gloo on CPU): TRL's real ``VLLMGeneration`` in server mode, its client replaced by a scripted server
on the main process, and the multi-turn rollout over a real SQLite database. Rank 0's conversations
end at the first turn, rank 1's take three, so the processes have different numbers of live
conversations from the second turn on. Writes what it saw to ``<out>/rank<N>.json``.

Usage: python -m torch.distributed.run --nproc_per_node 2 trl_ranks_worker.py DB_PATH OUT_DIR
"""

from __future__ import annotations

import json
import re
import sys
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

from progress_sql.data import case_study
from progress_sql.env import EnvConfig
from progress_sql.execution.pool import ExecutionPool
from progress_sql.integrations.trl import EXAMPLE_ID, ROWS_ATTRIBUTE, TrlRollout, VLLMGenerator
from progress_sql.prompts import CompactFormat
from progress_sql.types import Example
from tests.integrations.conftest import CORPUS
from tests.tiny_lm import tiny_model, tiny_tokenizer

FORMAT = CompactFormat()
INVALID = "SELECT nope FROM suppliers"
#: The answers per rank, turn by turn.
SCRIPTS = {0: [case_study.GOLD_SQL], 1: [INVALID, INVALID, case_study.GOLD_SQL]}
QUESTION = re.compile(r"rank (\d) question (\d)")


class ScriptedServer:
    """TRL's ``VLLMClient`` (trl 1.16.0 ``generation/vllm_client.py:370-466``: the returned dict, logprobs
    shaped (sequences, tokens, 1)), answering each context with its rank's script for its turn."""

    tokenizer: Any = None
    requests: ClassVar[list[int]] = []  # contexts per generate call, on the main process

    def __init__(self, base_url: str | None = None, group_port: int = 0, connection_timeout: float = 0.0) -> None:
        pass

    def init_communicator(self, device: Any = 0) -> None:
        pass

    def generate(self, prompts: list[list[int]], n: int = 1, **settings: Any) -> dict[str, Any]:
        ScriptedServer.requests.append(len(prompts))
        eos = self.tokenizer.eos_token_id
        completions = []
        for prompt in prompts:
            text = self.tokenizer.decode(prompt, skip_special_tokens=True)
            found = QUESTION.search(text)
            assert found is not None
            rank = int(found.group(1))
            sql = SCRIPTS[rank][text.count("\nF:")]
            completions.append([*self.tokenizer(FORMAT.answer(sql), add_special_tokens=False)["input_ids"], eos])
        return {
            "prompt_ids": prompts,
            "completion_ids": completions,
            "logprobs": [[[-0.5] for _ in c] for c in completions],
            "logprob_token_ids": [[[t] for t in c] for c in completions],
        }


def main(db_path: str, out: Path) -> None:
    from accelerate import Accelerator
    from accelerate.utils import InitProcessGroupKwargs
    from trl.generation import vllm_generation

    # a process waiting for a collective that never comes fails after a minute instead of hanging
    accelerator = Accelerator(cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(seconds=60))])
    tokenizer = tiny_tokenizer(CORPUS)
    ScriptedServer.tokenizer = tokenizer
    vllm_generation.is_vllm_available = lambda *args, **kwargs: True
    vllm_generation.VLLMClient = ScriptedServer
    engine = vllm_generation.VLLMGeneration(
        model=tiny_model(tokenizer), accelerator=accelerator, processing_class=tokenizer, mode="server",
        max_completion_length=64,
    )  # fmt: skip
    rank = accelerator.process_index
    example = Example(0, "names and average prices", "contact_lenses", db_path, case_study.GOLD_SQL)
    prompts = [FORMAT.prompt("contact_lenses", f"rank {rank} question {j}") for j in range(2)]
    generator = VLLMGenerator(tokenizer.eos_token_id)
    trainer = SimpleNamespace(
        accelerator=accelerator, vllm_generation=engine,
        **{ROWS_ATTRIBUTE: [{EXAMPLE_ID: 0}, {EXAMPLE_ID: 0}], "rollout_example_ids": [0, 0]},
    )  # fmt: skip
    with ExecutionPool(workers=1) as pool:
        rollout = TrlRollout([example], tokenizer, FORMAT, generator, env_config=EnvConfig(max_turns=3), pool=pool)
        output = rollout(prompts, trainer)
    seen = {
        "rank": rank,
        "num_turns": output["num_turns"],
        "k_star": output["k_star"],
        "final_sql": output["final_sql"],
        "answers": [tokenizer.decode(ids, skip_special_tokens=True) for ids in output["completion_ids"]],
        "generator_calls": getattr(generator, "calls", None),
        "server_requests": ScriptedServer.requests,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(seen), encoding="utf-8")
    log_two_steps(rollout, prompts, trainer, out)
    accelerator.wait_for_everyone()


def log_two_steps(rollout: TrlRollout, prompts: list[str], trainer: Any, out: Path) -> None:
    """Two optimizer steps' logs through train's own metrics sink, each after a rollout of this
    process's episodes (the logs TRL passes are the same on every process; the trajectory statistics
    are each process's own)."""
    from progress_sql.training.rl import _metrics_sink, _TrajectoryStats

    stats = _TrajectoryStats(rollout, group_size=2)
    rows: list[dict[str, Any]] = []
    sink = _metrics_sink(out / "metrics.jsonl", stats, rows)
    with ExecutionPool(workers=1) as pool:
        rollout.pool = pool
        for step in (1, 2):
            stats(prompts, trainer)
            sink(step, {"loss": 0.25 * step, "reward": 1.0})
    (out / f"rows{trainer.accelerator.process_index}.json").write_text(json.dumps(rows), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
