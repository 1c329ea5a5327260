"""The environment inside one process, driven by atroposlib's own methods (``collect_trajectories``,
``handle_send_to_api``, ``evaluate``, the config class its CLI builds) against the scripted server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from atroposlib.envs.base import APIServerConfig
from pydantic import ValidationError

from progress_sql.integrations.atropos import ProgressSQLAtroposConfig, ProgressSQLAtroposEnv, episode_marks
from progress_sql.profiles import PROFILES
from progress_sql.types import Example
from tests.with_atropos.conftest import (
    GOLD,
    MODEL,
    QUESTION,
    RIGHT,
    WRONG,
    ScriptedChat,
    atropos,
    write_rows,
)

BAD_GOLD_QUESTION = "Which singers sang at the missing venue?"


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory, music_db: Path) -> Path:
    return write_rows(tmp_path_factory.mktemp("atropos_env") / "rows.jsonl", [
        Example(0, QUESTION, "music", str(music_db), GOLD),
        Example(1, BAD_GOLD_QUESTION, "music", str(music_db), "SELECT nme FROM nowhere"),
    ])  # fmt: skip


def make_env(chat: ScriptedChat, tokenizer_dir: Path, rows: Path, **settings: Any) -> ProgressSQLAtroposEnv:
    config = ProgressSQLAtroposConfig(**{
        "rows": str(rows), "tokenizer_name": str(tokenizer_dir), "use_wandb": False, "group_size": 2,
        "shuffle_rows": False, "max_token_length": 8192, **settings,
    })  # fmt: skip
    server = APIServerConfig(model_name=MODEL, base_url=chat.base_url, api_key="x", health_check=False)
    return ProgressSQLAtroposEnv(config, [server])


def run(env: ProgressSQLAtroposEnv, scenario: Any) -> Any:
    async def main() -> Any:
        await env.setup()
        try:
            return await scenario()
        finally:
            env.close()

    return asyncio.run(main())


def test_serve_mode_drops_the_unscored_group_before_the_trainer(
    chat: ScriptedChat, tokenizer_dir: Path, rows: Path, tmp_path: Path
) -> None:
    """Atropos's own filter (``ensure_scores_are_not_same``, on in serve mode) leaves a failing gold's
    group out of what it sends; a group whose episodes differ goes through."""
    chat.reset({QUESTION: [[WRONG, RIGHT], [RIGHT]]})
    out = tmp_path / "sent.jsonl"
    env = make_env(chat, tokenizer_dir, rows, ensure_scores_are_not_same=True, data_path_to_save_groups=str(out))
    env.max_token_len = 16384  # what the trainer's registration sets

    async def scenario() -> list[dict[str, Any]]:
        groups = []
        for _ in range(2):
            item = await env.get_next_item()
            group, backlog = await env.collect_trajectories(item)
            assert backlog == []
            groups.append(group)
            await env.handle_send_to_api(group, item, do_send_to_api=False)
        env.jsonl_writer.close()
        return groups

    scored, unscored = run(env, scenario)
    assert unscored["scores"] == [0.0, 0.0]
    assert all(marks["set_advantage_to_zero"] for marks in unscored["overrides"])
    sent = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [group["scores"] for group in sent] == [scored["scores"]]


def test_the_context_limit_ends_an_episode_with_its_reward_so_far(
    chat: ScriptedChat, tokenizer_dir: Path, rows: Path
) -> None:
    env = make_env(chat, tokenizer_dir, rows, max_turns=4)
    chat.reset({QUESTION: [[WRONG, WRONG, WRONG, WRONG]]})

    async def scenario() -> Any:
        item = await env.get_next_item()
        opening = env._prompt_tokens(item.prompt)
        env.config.max_token_length = len(opening) + 40  # room for one answer, not for the feedback after it
        return await env.play(item, split="train", temperature=1.0)

    played = run(env, scenario)
    assert (played.stop, played.unscored, played.finish_reason) == ("context", False, "length")
    assert played.metrics["turns"] == 1
    assert [m["role"] for m in played.messages] == ["system", "user", "assistant", "user"]
    assert played.score >= 0.0
    assert episode_marks(played)["reward"] == played.score
    assert len(chat.requests_of(QUESTION)) == 1


def test_the_turn_budget_ends_an_episode_without_a_match(chat: ScriptedChat, tokenizer_dir: Path, rows: Path) -> None:
    env = make_env(chat, tokenizer_dir, rows, max_turns=2)
    chat.reset({QUESTION: [[WRONG, WRONG]]})

    async def scenario() -> Any:
        return await env.play(await env.get_next_item(), split="train", temperature=1.0)

    played = run(env, scenario)
    assert (played.stop, played.metrics["turns"], played.metrics["match"]) == ("done", 2, False)
    assert played.record["match"] is False
    assert played.score == pytest.approx(played.metrics["reward"])


def test_evaluate_logs_atropos_metrics_and_samples(
    chat: ScriptedChat, tokenizer_dir: Path, rows: Path, tmp_path: Path
) -> None:
    env = make_env(chat, tokenizer_dir, rows, eval_rows=str(rows), data_dir_to_save_evals=str(tmp_path / "evals"))
    chat.reset({QUESTION: [[RIGHT]]})
    run(env, env.evaluate)
    results = json.loads((tmp_path / "evals" / "metrics.json").read_text(encoding="utf-8"))["results"]["all"]
    assert results == {"eval/unscored_rate": 0.5, "eval/match_rate": 1.0, "eval/mean_reward": pytest.approx(
        results["eval/mean_reward"]), "eval/mean_turns": 1.0, "eval/context_stop_rate": 0.0}  # fmt: skip
    assert results["eval/mean_reward"] > 0
    samples = [json.loads(line) for line in (tmp_path / "evals" / "samples.jsonl").read_text().splitlines()]
    assert [(s["db_id"], s["match"], s["stop"]) for s in samples] == [("music", True, "done"),
                                                                      ("music", False, "gold_invalid")]  # fmt: skip
    assert chat.requests_of(QUESTION)[0].body["temperature"] == 0.0


def test_settings_reach_every_episode(chat: ScriptedChat, tokenizer_dir: Path, rows: Path) -> None:
    env = make_env(chat, tokenizer_dir, rows, profile="paper", max_turns=2,
                   env_config='{"timeout_s": 1.5, "odt": {"alpha": 0.6}, "preset": "spider"}')  # fmt: skip
    config = env.settings.config
    assert (config.max_turns, config.timeout_s, config.odt.alpha, config.preset) == (2, 1.5, 0.6, "spider")
    assert config.schema_profile == PROFILES["paper"].env_fields()["schema_profile"]  # the profile's own
    assert config.schema_profile != PROFILES["progress-sql"].env_fields()["schema_profile"]
    env.close()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"env_config": {"turns": 2}}, "unknown progress_sql env_config keys: turns"),
        ({"env_config": {"step_rewards": True}}, "Atropos scores whole sequences"),
        ({"env_config": "{not json"}, "env_config: neither a .json/.yaml file nor a JSON object"),
        ({"env_config": "/nowhere/env.yaml"}, "env_config: no file /nowhere/env.yaml"),
        ({"rows_format": "csv"}, "rows_format must be one of"),
        ({"rows": "/nowhere/rows.jsonl"}, "no file /nowhere/rows.jsonl"),
        ({"profile": "nope"}, "nope"),
        ({"max_turns": 0}, "greater than or equal to 1"),
    ],
)
def test_bad_settings_are_pydantic_validation_errors(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ProgressSQLAtroposConfig(**settings)


def test_the_command_line_answers_a_bad_setting_with_atropos_error(tmp_path: Path, chat: ScriptedChat) -> None:
    """Atropos's CLI builds the config class from the flags: a bad EnvConfig key stops it before any
    server is called, with pydantic's error naming the field."""
    run = atropos("process", "--env.env_config", '{"turns": 2}', "--env.use_wandb", "false",
                  "--openai.base_url", chat.base_url, "--openai.model_name", MODEL, cwd=tmp_path)  # fmt: skip
    assert run.returncode != 0
    assert "ValidationError" in run.stderr
    assert "unknown progress_sql env_config keys: turns" in run.stderr
    unknown = atropos("process", "--env.no_such_flag", "1", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "unrecognized arguments: --env.no_such_flag" in unknown.stderr
