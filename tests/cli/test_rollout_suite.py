"""`progress-sql rollout --suite`: a hard-coded answer equal to the gold's result on the original
database matches without a suite and does not with one (the honest answer matches either way)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from progress_sql.cli import app
from tests.suite_case import GOLD, HARD_CODED, QUESTION, answer, build_suite_case

runner = CliRunner()


def _rollout(case_dir: Path, out: Path, sql: str, *extra: str) -> list[dict[str, Any]]:
    replay = out.parent / f"{out.name}.replay.jsonl"
    replay.write_text(json.dumps({"key": QUESTION, "responses": [answer(sql)]}) + "\n")
    result = runner.invoke(app, ["rollout", "--task", str(case_dir / "questions.json"), "--backend", "replay",
                                 "--replay", str(replay), "--turns", "1", "--out", str(out), "--workers", "1",
                                 *extra])  # fmt: skip
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def _turn(records: list[dict[str, Any]]) -> dict[str, Any]:
    (record,) = records
    (turn,) = record["turns"]
    return dict(turn)


def test_rollout_suite_turns_a_hard_coded_match_into_a_mismatch(tmp_path: Path) -> None:
    case = build_suite_case(tmp_path / "case")
    plain = _turn(_rollout(case.folder, tmp_path / "plain", HARD_CODED))
    assert (plain["match"], plain["verdict"]) == (True, "match")
    suited = _turn(_rollout(case.folder, tmp_path / "suited", HARD_CODED, "--suite", str(case.suite)))
    assert (suited["match"], suited["verdict"]) == (False, "suite_mismatch")
    honest = _turn(_rollout(case.folder, tmp_path / "honest", GOLD, "--suite", str(case.suite)))
    assert (honest["match"], honest["verdict"]) == (True, "match")
    summary = json.loads((tmp_path / "suited" / "summary.json").read_text())
    assert summary["settings"]["suite"] == str(case.suite)
