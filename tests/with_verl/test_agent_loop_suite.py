"""The verl agent loop with a test suite (``agent_loops.yaml``'s ``suite``, or the exported row's
``extra_info.suite``), in verl's own rollout worker: a hard-coded answer equal to the gold's result
on the original database matches without a suite and does not with one."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from progress_sql.export.build import export_items
from progress_sql.export.formats import build_rows, get_format
from progress_sql.integrations.verl import TURNS_KEY
from tests.suite_case import GOLD, HARD_CODED, QUESTION, answer, build_suite_case, carrying_suite
from tests.with_verl.conftest import dataset_batch, write_parquet
from tests.with_verl.test_agent_loop import agent_loops_file, make_worker


def _verdict(worker: Any, rows: list[dict[str, Any]], sql: str, tmp_path: Path) -> str:
    server = worker.llm_client
    server.tokenizer, server.scripts = worker.tokenizer, {QUESTION: [answer(sql)]}
    parquet = write_parquet(rows, tmp_path / "rows.parquet")
    output = asyncio.run(worker.generate_sequences(dataset_batch(parquet, worker.tokenizer, worker.config)))
    (record,) = output.non_tensor_batch[TURNS_KEY][0]
    return str(record["verdict"])


def test_agent_loop_suite_from_settings_and_from_the_row(model_dir: Path, tmp_path: Path) -> None:
    case = build_suite_case(tmp_path / "case")
    plain = build_rows(export_items([("case", case.example)]), get_format("verl"))
    suited = [carrying_suite(row, case.suite) for row in plain]
    worker = make_worker(model_dir, agent_loops_file(tmp_path, max_turns=1))
    assert _verdict(worker, plain, HARD_CODED, tmp_path) == "match"
    assert _verdict(worker, suited, HARD_CODED, tmp_path) == "suite_mismatch"  # the row carries its suite
    assert _verdict(worker, suited, GOLD, tmp_path) == "match"
    with_suite = make_worker(model_dir, agent_loops_file(tmp_path, max_turns=1, suite=str(case.suite)))
    assert _verdict(with_suite, plain, HARD_CODED, tmp_path) == "suite_mismatch"
    exported = build_rows(export_items([("case", case.example)], suite=str(case.suite)), get_format("verl"))
    assert exported == suited  # what export --suite writes
