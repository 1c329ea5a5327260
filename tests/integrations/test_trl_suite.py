"""The TRL rollout with a test suite: a hard-coded answer equal to the gold's result on the original
database matches without a suite and does not with one, whether the suite comes from the settings
(``EnvConfig.suite``) or from an exported row (``progress-sql export --suite``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from progress_sql.env import EnvConfig
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.build import export_items
from progress_sql.export.formats import get_format
from progress_sql.integrations.trl import TrlRollout
from tests.integrations.test_trl_rollout import FORMAT, ScriptedGenerator, kept_ids
from tests.suite_case import GOLD, HARD_CODED, build_suite_case, carrying_suite


def _first_match(tokenizer: Any, pool: ExecutionPool, tmp_path: Path, sql: str, *, suite: Path | None) -> bool:
    case = build_suite_case(tmp_path)
    prompt = FORMAT.prompt(case.example.db_id, case.example.question)
    config = EnvConfig(max_turns=1, suite=None if suite is None else str(suite))
    rollout = TrlRollout([case.example], tokenizer, FORMAT, ScriptedGenerator(tokenizer, {prompt: [sql]}),
                         env_config=config, pool=pool)  # fmt: skip
    out = rollout([prompt], kept_ids(0))
    assert out["gold_error"] == [""]
    return bool(out["first_turn_match"][0])


def test_trl_rollout_suite_from_settings(tiny_tokenizer: Any, pool: ExecutionPool, tmp_path: Path) -> None:
    suite = build_suite_case(tmp_path).suite
    assert _first_match(tiny_tokenizer, pool, tmp_path, HARD_CODED, suite=None) is True
    assert _first_match(tiny_tokenizer, pool, tmp_path, HARD_CODED, suite=suite) is False
    assert _first_match(tiny_tokenizer, pool, tmp_path, GOLD, suite=suite) is True


def test_trl_rollout_suite_from_an_exported_row(tiny_tokenizer: Any, pool: ExecutionPool, tmp_path: Path) -> None:
    case = build_suite_case(tmp_path)
    (item,) = export_items([("case", case.example)], schema_profile="none")
    plain = get_format("trl").row(item, 0)
    suited = carrying_suite(plain, case.suite)
    results = {}
    for name, row in (("plain", plain), ("suited", suited)):
        prompt = FORMAT.first_prompt(row["prompt"], case.example.db_id, case.example.question)
        generator = ScriptedGenerator(tiny_tokenizer, {prompt: [HARD_CODED]})
        rollout = TrlRollout((), tiny_tokenizer, FORMAT, generator, env_config=EnvConfig(max_turns=1), pool=pool)
        trainer = type("Trainer", (), {"rollout_rows": [row]})()
        results[name] = rollout([row["prompt"]], trainer)["first_turn_match"][0]
    assert results == {"plain": True, "suited": False}
    (suited_item,) = export_items([("case", case.example)], schema_profile="none", suite=str(case.suite))
    assert get_format("trl").row(suited_item, 0) == suited  # what export --suite writes
