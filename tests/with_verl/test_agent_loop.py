"""The agent loop inside verl's own rollout worker (``AgentLoopWorker.generate_sequences``, no Ray):
rows from a parquet file through ``RLHFDataset``, the loop instantiated by hydra from our
``agent_loops.yaml``, a scripted model server, real SQLite databases and the isolated pool."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import hydra
import pytest
import torch
from hydra.errors import InstantiationException
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, DictConfigWrap, ToolListWrap
from verl.protocol import DataProto
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.utils.tensordict_utils import list_of_dict_to_tensordict

from progress_sql.env.core import EnvConfig, SQLRefineEnv
from progress_sql.errors import ConfigError
from progress_sql.integrations.verl import AGENT_LOOPS_YAML, AGENT_NAME, TURNS_KEY
from progress_sql.integrations.verl.agent_loop import STOP_KEY, merge_generation_fields
from progress_sql.integrations.verl.reward import DATABASE_ERROR_KEY, GOLD_ERROR_KEY, compute_score
from progress_sql.rewards.registry import RewardSpec
from progress_sql.types import Example
from tests.with_verl.conftest import ScriptedServer, answer, compose_verl, dataset_batch, rows_of, write_parquet

SLOW_SQL = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
WRONG = answer("SELECT count(*) FROM concert")


def agent_loops_file(folder: Path, **settings: Any) -> Path:
    """The shipped agent_loops.yaml with some constructor arguments changed."""
    entries = OmegaConf.load(AGENT_LOOPS_YAML)
    for key, value in settings.items():
        entries[0][key] = value
    path = folder / "agent_loops.yaml"
    OmegaConf.save(entries, path)
    return path


def make_worker(
    model_dir: Path, loops: Path, *, prompt_length: int = 4096, response_length: int = 1024, extra: tuple[str, ...] = ()
) -> Any:
    config = compose_verl(
        [
            *extra,
            f"actor_rollout_ref.model.path={model_dir}",
            f"actor_rollout_ref.rollout.prompt_length={prompt_length}",
            f"actor_rollout_ref.rollout.response_length={response_length}",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}",
            "actor_rollout_ref.rollout.name=vllm",
            "data.max_prompt_length=4096",
        ]
    )
    return AgentLoopWorker(config, llm_client=ScriptedServer(None, {}))


def rollout(
    worker: Any, examples: list[Example], scripts: dict[str, list[str]], tmp_path: Path
) -> tuple[DataProto, Any]:
    server = worker.llm_client
    server.tokenizer, server.scripts = worker.tokenizer, scripts
    batch = dataset_batch(write_parquet(rows_of(examples), tmp_path / "rows.parquet"), worker.tokenizer, worker.config)
    return asyncio.run(worker.generate_sequences(batch)), server


def valid_response(output: DataProto, i: int) -> tuple[list[int], list[int]]:
    """Response token ids and their mask without the padding."""
    length = int(output.batch["attention_mask"][i, output.batch["prompts"].shape[1] :].sum())
    return output.batch["responses"][i, :length].tolist(), output.batch["response_mask"][i, :length].tolist()


def test_feedback_is_masked_and_the_loop_stops_at_the_match(
    model_dir: Path, examples: list[Example], tmp_path: Path
) -> None:
    example = examples[0]
    right = answer(example.gold_sql)
    worker = make_worker(model_dir, AGENT_LOOPS_YAML)
    output, server = rollout(worker, [example], {example.question: [WRONG, right, WRONG, WRONG]}, tmp_path)
    assert worker.hf_model_type == "qwen2"
    assert output.non_tensor_batch["agent_name"].tolist() == [AGENT_NAME]
    ids, mask = valid_response(output, 0)
    tokenizer = worker.tokenizer
    model_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 1], skip_special_tokens=False)
    env_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 0], skip_special_tokens=False)
    assert model_text == f"{WRONG}<|im_end|>{right}<|im_end|>"  # exactly the model's own tokens are trained
    assert env_text.startswith("\n<|im_start|>user\nFeedback:")
    assert env_text.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert [call[1] for call in server.calls] == [0, 1]  # no third turn after the match
    records = output.non_tensor_batch[TURNS_KEY][0]
    assert [(r["exec_status"], r["match"]) for r in records] == [("ok", False), ("ok", True)]
    assert records[1]["f"] == 1.0
    assert records[0]["f"] < 1.0
    assert output.non_tensor_batch[STOP_KEY].tolist() == ["match"]
    assert output.non_tensor_batch["__num_turns__"].tolist() == [4]  # prompt, answer, feedback, answer


def test_t_turns_truncate_the_episode(model_dir: Path, examples: list[Example], tmp_path: Path) -> None:
    example = examples[1]
    worker = make_worker(model_dir, agent_loops_file(tmp_path, max_turns=3))
    output, server = rollout(worker, [example], {example.question: [WRONG] * 6}, tmp_path)
    records = output.non_tensor_batch[TURNS_KEY][0]
    assert len(records) == 3
    assert not any(r["match"] for r in records)
    assert [call[1] for call in server.calls] == [0, 1, 2]
    assert output.non_tensor_batch[STOP_KEY].tolist() == ["max_turns"]
    ids, mask = valid_response(output, 0)
    assert worker.tokenizer.decode(ids).count("Feedback:") == 2  # no feedback after the last turn
    assert mask[-1] == 1  # the response ends with the model's own eos


def test_a_failing_gold_scores_zero_without_stopping_the_batch(
    model_dir: Path, examples: list[Example], tmp_path: Path
) -> None:
    """A row whose gold query fails: the model answers once, nothing runs, the reward is 0 with
    gold_invalid set; the other trajectories of the batch are unaffected."""
    good = examples[0]
    bad = replace(examples[1], gold_sql="SELECT nme FROM no_such_table")
    worker = make_worker(model_dir, AGENT_LOOPS_YAML)
    scripts = {good.question: [answer(good.gold_sql)], bad.question: [WRONG, WRONG]}
    output, _ = rollout(worker, [good, bad], scripts, tmp_path)
    assert output.non_tensor_batch[STOP_KEY].tolist() == ["match", "gold_invalid"]
    errors = output.non_tensor_batch[GOLD_ERROR_KEY].tolist()
    assert errors[0] == ""
    assert "no_such_table" in errors[1]
    assert output.non_tensor_batch[TURNS_KEY][1] == []
    assert output.non_tensor_batch["__num_turns__"].tolist() == [2, 2]  # prompt and one answer each
    assert valid_response(output, 1)[1].count(1) > 0  # one model turn, trained on with reward 0
    extra = {TURNS_KEY: [], GOLD_ERROR_KEY: errors[1]}
    scored = compute_score("spider", WRONG, bad.gold_sql, extra)
    assert (scored["score"], scored["gold_invalid"]) == (0.0, 1)
    assert set(scored) == set(compute_score("spider", WRONG, good.gold_sql, {TURNS_KEY: []} | good_info(good)))


def test_a_missing_database_scores_zero_without_stopping_the_batch(
    model_dir: Path, examples: list[Example], tmp_path: Path
) -> None:
    """A row whose database is not on this node: one unexecuted answer, reward 0, marked
    (database_error); the other trajectories of the batch are unaffected."""
    good = examples[0]
    lost = replace(examples[1], db_path=str(tmp_path / "elsewhere" / "music.sqlite"))
    worker = make_worker(model_dir, AGENT_LOOPS_YAML)
    output, server = rollout(
        worker, [good, lost], {good.question: [answer(good.gold_sql)], lost.question: [WRONG]}, tmp_path
    )
    assert output.non_tensor_batch[STOP_KEY].tolist() == ["match", "database_error"]
    errors = output.non_tensor_batch[DATABASE_ERROR_KEY].tolist()
    assert errors[0] == ""
    assert "elsewhere" in errors[1]
    assert output.non_tensor_batch[TURNS_KEY][1] == []
    assert [call[1] for call in server.calls if call[0] == lost.question] == [0]
    scored = compute_score("spider", WRONG, lost.gold_sql, {TURNS_KEY: [], DATABASE_ERROR_KEY: errors[1]})
    assert (scored["score"], scored["database_error"], scored["gold_invalid"]) == (0.0, 1, 0)
    # no record (a row scored outside the loop): the fallback opens the database, and marks it too
    fallback = compute_score("spider", WRONG, lost.gold_sql, rows_of([lost])[0]["extra_info"])
    assert (fallback["score"], fallback["database_error"], fallback["from_record"]) == (0.0, 1, 0)
    assert set(fallback) == set(compute_score("spider", WRONG, good.gold_sql, good_info(good)))


def test_generation_fields_merge_over_turns_as_verls_tool_agent_loop() -> None:
    """The first turn's fields, then the latest max_global_steps and the summed speculative counts."""
    first = {"global_steps": 3, "min_global_steps": 3, "max_global_steps": 3, "num_cached_tokens": 0,
             "spec_num_draft_tokens": 4}  # fmt: skip
    later = {"global_steps": 4, "min_global_steps": 4, "max_global_steps": 4, "num_cached_tokens": 96,
             "spec_num_draft_tokens": 6}  # fmt: skip
    merged = merge_generation_fields(merge_generation_fields({}, first), later)
    assert merged == {**first, "max_global_steps": 4, "spec_num_draft_tokens": 10}
    assert merge_generation_fields(merged, {"max_global_steps": None}) == merged


def good_info(example: Example) -> dict[str, Any]:
    return rows_of([example])[0]["extra_info"]


def test_token_stream_equals_the_chat_template_of_the_conversation(
    model_dir: Path, examples: list[Example], tmp_path: Path
) -> None:
    """With the model's hf_model_type the "\\n" after <|im_end|> survives; the default builder drops it."""
    example = examples[2]
    worker = make_worker(model_dir, AGENT_LOOPS_YAML)
    right = answer(example.gold_sql)
    output, _ = rollout(worker, [example], {example.question: [WRONG, right]}, tmp_path)
    prompt_length = int(output.batch["attention_mask"][0, : output.batch["prompts"].shape[1]].sum())
    prompt = output.batch["prompts"][0, -prompt_length:].tolist()
    response, _ = valid_response(output, 0)
    feedback = rows_feedback(worker.tokenizer.decode(response, skip_special_tokens=False))
    conversation = [
        *output.non_tensor_batch["raw_prompt"][0],
        {"role": "assistant", "content": WRONG},
        {"role": "user", "content": feedback},
        {"role": "assistant", "content": right},
    ]
    rendered = worker.tokenizer.apply_chat_template(conversation, tokenize=True, return_dict=False)
    assert prompt + response + worker.tokenizer.encode("\n", add_special_tokens=False) == list(rendered)

    # The same loop built without the model type (verl's default builder) loses the separator.
    default = run_directly(worker, example, [WRONG, right], hf_model_type=None)
    text = worker.tokenizer.decode(default.response_ids, skip_special_tokens=False)
    assert "<|im_end|><|im_start|>user" in text


def build_loop(worker: Any, server: Any, hf_model_type: str | None, entry: Any = None) -> Any:
    """The loop that hydra builds from agent_loops.yaml (or ``entry``), as verl's workers build it."""
    return hydra.utils.instantiate(
        OmegaConf.load(AGENT_LOOPS_YAML)[0] if entry is None else entry,
        trainer_config=DictConfigWrap(worker.config),
        server_manager=server,
        tokenizer=worker.tokenizer,
        processor=None,
        hf_model_type=hf_model_type,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(worker.config.data),
        tools=ToolListWrap([]),
    )


def run_directly(worker: Any, example: Example, script: list[str], hf_model_type: str | None) -> Any:
    """One ``run`` of the loop that hydra builds from agent_loops.yaml, as verl's workers build it."""
    server = ScriptedServer(worker.tokenizer, {example.question: script})
    row = rows_of([example])[0]

    async def run() -> Any:
        loop = build_loop(worker, server, hf_model_type)
        return await loop.run({"temperature": 1.0, "logprobs": True}, raw_prompt=row["prompt"], **row)

    return asyncio.run(run())


def test_the_record_survives_the_v1_trainers_packing(model_dir: Path, examples: list[Example]) -> None:
    """verl's default (v1) trainer packs each output with ``as_dict`` into a TensorDict."""
    worker = make_worker(model_dir, AGENT_LOOPS_YAML)
    outputs = [run_directly(worker, e, [WRONG, answer(e.gold_sql)], "qwen2") for e in examples[:2]]
    packed = list_of_dict_to_tensordict([o.as_dict() for o in outputs])
    for output, extra in zip(outputs, packed["extra_fields"], strict=True):
        assert extra[TURNS_KEY] == output.extra_fields[TURNS_KEY]
        assert [r["match"] for r in extra[TURNS_KEY]] == [False, True]
    assert all(o.response_logprobs is not None and len(o.response_logprobs) == len(o.response_ids) for o in outputs)


def rows_feedback(response_text: str) -> str:
    """The feedback message's content inside a decoded response."""
    start = response_text.index("<|im_start|>user\n") + len("<|im_start|>user\n")
    return response_text[start : response_text.index("<|im_end|>", start)]


def test_prompt_and_response_respect_the_configured_lengths(
    model_dir: Path, examples: list[Example], tmp_path: Path
) -> None:
    example = examples[3]
    worker = make_worker(model_dir, AGENT_LOOPS_YAML, prompt_length=256, response_length=96)
    long_wrong = answer("SELECT T1.concert_name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id")
    output, server = rollout(worker, [example], {example.question: [long_wrong] * 4}, tmp_path)
    assert output.batch["prompts"].shape == (1, 256)
    assert output.batch["responses"].shape == (1, 96)
    assert output.batch["response_mask"].shape == (1, 96)
    assert int(output.batch["attention_mask"][0, :256].sum()) == 256  # the long prompt was left-truncated
    budgets = [call[2] for call in server.calls]
    assert budgets[0] == 96
    assert all(b <= 96 for b in budgets)
    assert budgets == sorted(budgets, reverse=True)
    assert output.non_tensor_batch[STOP_KEY].tolist() == ["response_length"]
    assert len(output.non_tensor_batch[TURNS_KEY][0]) < 4
    assert output.non_tensor_batch[TURNS_KEY][0][-1]["reward"] is not None  # the loop scored the cut trajectory


def test_loops_run_concurrently_while_one_query_hits_its_deadline(
    model_dir: Path, examples: list[Example], tmp_path: Path
) -> None:
    """Six trajectories share one worker process; one runs a query that never ends. The others
    finish their two turns while it is still running, and it gets a timeout, feedback and a second turn."""
    loops = agent_loops_file(tmp_path, timeout_s=5.0, execution_workers=3)
    worker = make_worker(model_dir, loops)
    slow = examples[5]
    scripts = {e.question: [WRONG, answer(e.gold_sql)] for e in examples}
    scripts[slow.question] = [answer(SLOW_SQL), answer(slow.gold_sql)]
    output, server = rollout(worker, examples, scripts, tmp_path)
    records = list(output.non_tensor_batch[TURNS_KEY])
    slow_row = [r["question"] for r in output.non_tensor_batch["extra_info"]].index(slow.question)
    assert records[slow_row][0]["exec_status"] == "timeout"
    assert all(rec[-1]["match"] for rec in records)  # every trajectory, the slow one too, ends correct
    order = [(question, turn) for question, turn, _ in server.calls]
    slow_second = order.index((slow.question, 1))
    others_second = [order.index((e.question, 1)) for e in examples if e is not slow]
    assert max(others_second) < slow_second, "the other trajectories waited for the slow query"
    assert torch.equal(output.batch["response_mask"].sum(dim=1) > 0, torch.ones(len(examples), dtype=torch.bool))


def test_the_record_scores_like_the_environment(model_dir: Path, examples: list[Example], tmp_path: Path) -> None:
    """compute_score on the loop's record gives the reward SQLRefineEnv gives the same answers."""
    example = examples[4]
    turns = [WRONG, answer("SELECT name FROM singer"), answer(example.gold_sql)]
    worker = make_worker(model_dir, AGENT_LOOPS_YAML)
    output, _ = rollout(worker, [example], {example.question: turns}, tmp_path)
    extra_info = {**output.non_tensor_batch["extra_info"][0], TURNS_KEY: output.non_tensor_batch[TURNS_KEY][0]}
    scored = compute_score("spider", "", example.gold_sql, extra_info)
    with SQLRefineEnv(EnvConfig(max_turns=4)) as env:
        env.reset(example)
        steps = [env.step(text) for text in turns]
    breakdown = steps[-1].info.reward
    assert breakdown is not None
    assert steps[-1].terminated
    assert scored["score"] == pytest.approx(breakdown.total)
    assert {k: scored[k] for k, _ in breakdown.components} == pytest.approx(dict(breakdown.components))
    assert scored["k_star"] == 3
    assert scored["from_record"] == 1


def test_the_reward_is_computed_once_per_trajectory(
    model_dir: Path, examples: list[Example], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop scores each trajectory (a match, a T-turn miss, one cut by the response budget) once;
    compute_score reads that reward from the record, and scores again only when asked for other weights."""
    calls: list[str] = []
    score = RewardSpec.score

    def counting(spec: RewardSpec, trajectory: Any, context: Any) -> Any:
        calls.append(spec.name)
        return score(spec, trajectory, context)

    monkeypatch.setattr(RewardSpec, "score", counting)
    chosen = examples[:2]
    scripts = {chosen[0].question: [WRONG, answer(chosen[0].gold_sql)], chosen[1].question: [WRONG] * 4}
    output, _ = rollout(make_worker(model_dir, agent_loops_file(tmp_path, max_turns=3)), chosen, scripts, tmp_path)
    long_wrong = answer("SELECT T1.concert_name FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id")
    worker = make_worker(model_dir, AGENT_LOOPS_YAML, prompt_length=256, response_length=96)
    cut, _ = rollout(worker, [examples[3]], {examples[3].question: [long_wrong] * 4}, tmp_path)
    stops = [*output.non_tensor_batch[STOP_KEY].tolist(), *cut.non_tensor_batch[STOP_KEY].tolist()]
    assert stops == ["match", "max_turns", "response_length"]
    assert calls == ["progressive"] * 3  # one per trajectory, in the loop
    infos = [*output.non_tensor_batch["extra_info"], *cut.non_tensor_batch["extra_info"]]
    records = [*output.non_tensor_batch[TURNS_KEY], *cut.non_tensor_batch[TURNS_KEY]]
    golds = [*(e.gold_sql for e in chosen), examples[3].gold_sql]
    scored = [
        compute_score("spider", "", gold, {**info, TURNS_KEY: record})
        for gold, info, record in zip(golds, infos, records, strict=True)
    ]
    assert calls == ["progressive"] * 3  # compute_score only read the carried reward
    assert [s["from_record"] for s in scored] == [1, 1, 1]
    assert [s["score"] for s in scored] == [record[-1]["reward"]["total"] for record in records]
    reweighted = compute_score("spider", "", golds[0], {TURNS_KEY: records[0]}, gamma=0.8)
    assert len(calls) == 4  # other weights than the loop's: scored again from the record
    assert reweighted["score"] != scored[0]["score"]


def test_the_loop_takes_every_env_setting_and_renders_no_prompt(model_dir: Path, tmp_path: Path) -> None:
    worker = make_worker(model_dir, AGENT_LOOPS_YAML)
    entry = OmegaConf.load(agent_loops_file(tmp_path, reward="one-shot", progressive={"gamma": 0.8},
                                            odt={"alpha": 0.6}, schema_profile="full"))[0]  # fmt: skip

    async def make() -> Any:
        return build_loop(worker, ScriptedServer(worker.tokenizer, {}), "qwen2", entry)

    loop = asyncio.run(make())
    config = loop.env_config
    assert (config.reward, config.progressive.gamma, config.odt.alpha, config.max_turns) == ("one-shot", 0.8, 0.6, 4)
    assert config.schema_profile == "none"  # the prompt is the row's: reset renders no schema
    entry["max_turn"] = 3

    with pytest.raises(InstantiationException, match=r"unknown agent_loops\.yaml keys: max_turn") as raised:
        asyncio.run(make())
    assert isinstance(raised.value.__cause__, ConfigError)


def test_the_loop_runs_the_profile_the_reward_names(model_dir: Path, tmp_path: Path) -> None:
    """``PROFILE=paper`` in the recipes: ``reward_kwargs.profile``, which the loop reads from the trainer's
    configuration; ``profile:`` in agent_loops.yaml may name it too, not another."""
    from progress_sql.env.settings import env_config_from_profile

    worker = make_worker(
        model_dir, AGENT_LOOPS_YAML, extra=("+reward.custom_reward_function.reward_kwargs.profile=paper",)
    )

    async def make(entry: Any = None) -> Any:
        return build_loop(worker, ScriptedServer(worker.tokenizer, {}), "qwen2", entry)

    config = asyncio.run(make()).env_config
    assert config == replace(env_config_from_profile("paper", {"timeout_s": 10.0}), schema_profile="none")
    assert (config.reward, config.preset, config.odt.verdict, config.max_turns) == (
        "progressive-paper",
        "bird",
        "syntax",
        4,
    )
    clash = OmegaConf.load(agent_loops_file(tmp_path, profile="progress-sql"))[0]
    with pytest.raises(InstantiationException, match=r"reward_kwargs\.profile paper") as raised:
        asyncio.run(make(clash))
    assert isinstance(raised.value.__cause__, ConfigError)


def test_an_ambiguous_episode_asks_then_answers(model_dir: Path, tmp_path: Path) -> None:
    from progress_sql.data.embedded import ambiguous_questions

    example = next(e for e in ambiguous_questions() if e.difficulty == "order")
    ask = "<think>which direction?</think><ask>Should the order be from the oldest first?</ask>"
    worker = make_worker(model_dir, AGENT_LOOPS_YAML)
    output, _server = rollout(worker, [example], {example.question: [ask, answer(example.gold_sql), WRONG]}, tmp_path)
    records = output.non_tensor_batch[TURNS_KEY][0]
    assert [(r["action"], r["slot"], r["match"]) for r in records] == [("ask", "order", False), ("sql", None, True)]
    assert example.ambiguity[0].interpretation in records[0]["feedback"]
    assert records[-1]["reward"]["components"]["ask"] == 0.5
    assert output.non_tensor_batch[STOP_KEY].tolist() == ["match"]
    info = {TURNS_KEY: records, GOLD_ERROR_KEY: "", DATABASE_ERROR_KEY: ""}
    score = compute_score("spider", "", example.gold_sql, info)
    assert score["ask"] == 0.5
    assert score["guess"] == 0.0
    assert score["checks"] == 0.0
    assert score["score"] == records[-1]["reward"]["total"]  # the carried reward, task terms included
