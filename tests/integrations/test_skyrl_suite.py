"""The SkyRL environment with a test suite (``env_config``'s ``suite``, or the exported row's): a
hard-coded answer equal to the gold's result on the original database matches without a suite and
does not with one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="the SkyRL tests need the [skyrl] extra")

from progress_sql.export.build import export_items  # noqa: E402
from progress_sql.export.formats import get_format  # noqa: E402
from progress_sql.integrations.skyrl import close_pools, register_env  # noqa: E402
from tests.suite_case import GOLD, HARD_CODED, answer, build_suite_case, carrying_suite  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def _stop_workers() -> Iterator[None]:
    yield
    close_pools()


def _step(row: dict[str, Any], sql: str, **env_config: Any) -> dict[str, Any]:
    extras = dict(row)
    prompt, env_class = extras.pop("prompt"), extras.pop("env_class")
    extras["max_turns"] = 1
    register_env()
    env = skyrl_gym.make(env_class, env_config={"execution_workers": 1, **env_config}, extras=extras)
    env.init(prompt)
    metadata: dict[str, Any] = env.step(answer(sql))["metadata"]
    return metadata


def test_skyrl_env_suite_from_settings_and_from_the_row(tmp_path: Path) -> None:
    case = build_suite_case(tmp_path)
    (plain_item,) = export_items([("case", case.example)])
    plain = get_format("skyrl").row(plain_item, 0)
    suited = carrying_suite(plain, case.suite)
    assert _step(plain, HARD_CODED)["verdict"] == "match"
    assert _step(suited, HARD_CODED)["verdict"] == "suite_mismatch"  # the row carries its suite
    assert _step(suited, GOLD)["verdict"] == "match"
    assert _step(plain, HARD_CODED, suite=str(case.suite))["verdict"] == "suite_mismatch"
    (suited_item,) = export_items([("case", case.example)], suite=str(case.suite))
    assert get_format("skyrl").row(suited_item, 0) == suited  # what export --suite writes
