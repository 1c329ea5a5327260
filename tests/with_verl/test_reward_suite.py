"""verl's ``compute_score`` fallback (a row that reaches the reward without the agent loop's turn
record: single-turn scoring) judges with the row's test suite (``extra_info.suite`` of a row exported
with ``--suite``): a hard-coded answer equal to the gold's result on the original database matches
without a suite and does not with one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from progress_sql.export.build import export_items
from progress_sql.export.formats import build_rows, get_format
from progress_sql.integrations.verl import compute_score
from tests.suite_case import GOLD, HARD_CODED, answer, build_suite_case, carrying_suite


def _fallback(row: dict[str, Any], sql: str) -> dict[str, Any]:
    scored: dict[str, Any] = compute_score(
        row["data_source"], answer(sql), row["reward_model"]["ground_truth"], dict(row["extra_info"])
    )
    assert scored["from_record"] == 0  # no turn record: the single-turn fallback scored it
    assert (scored["gold_invalid"], scored["database_error"]) == (0, 0)
    return scored


def test_compute_score_fallback_judges_with_the_rows_suite(tmp_path: Path) -> None:
    case = build_suite_case(tmp_path)
    (plain,) = build_rows(export_items([("case", case.example)]), get_format("verl"))
    suited = carrying_suite(plain, case.suite)  # as export --suite writes it (checked in test_agent_loop_suite)
    assert _fallback(plain, HARD_CODED)["k_star"] == 1  # right on the original database by accident
    hard_coded = _fallback(suited, HARD_CODED)
    assert hard_coded["k_star"] == 0  # the suite's databases count other rows
    honest = _fallback(suited, GOLD)
    assert honest["k_star"] == 1
    assert honest["score"] > hard_coded["score"]
