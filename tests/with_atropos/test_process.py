"""The environment through Atropos's own ``process`` mode (``BaseEnv.cli``, ``process_manager``): exported
rows in, a real OpenAI-compatible server answering, the ScoredDataGroups Atropos writes read back."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from progress_sql.types import Example
from tests.with_atropos.conftest import (
    GOLD,
    MODEL,
    QUESTION,
    RIGHT,
    WRONG,
    ScriptedChat,
    atropos,
    read_groups,
    write_rows,
)

BAD_GOLD_QUESTION = "Which singers sang at the missing venue?"


@pytest.fixture(scope="module")
def processed(
    tmp_path_factory: pytest.TempPathFactory, chat: ScriptedChat, tokenizer_dir: Path, music_db: Path
) -> tuple[list[dict], ScriptedChat]:
    """Two groups of two episodes: a question answered wrong then right (feedback between) and right at
    once, then a row whose gold fails."""
    folder = tmp_path_factory.mktemp("atropos_process")
    rows = write_rows(folder / "train.jsonl", [
        Example(0, QUESTION, "music", str(music_db), GOLD),
        Example(1, BAD_GOLD_QUESTION, "music", str(music_db), "SELECT nme FROM nowhere"),
    ])  # fmt: skip
    chat.reset({QUESTION: [[WRONG, RIGHT], [RIGHT]], BAD_GOLD_QUESTION: [[RIGHT]]})
    out = folder / "groups.jsonl"
    run = atropos(
        "process",
        "--env.rows", str(rows), "--env.tokenizer_name", str(tokenizer_dir), "--env.use_wandb", "false",
        "--env.group_size", "2", "--env.total_steps", "2", "--env.shuffle_rows", "false",
        "--env.max_turns", "3", "--env.data_path_to_save_groups", str(out),
        "--openai.base_url", chat.base_url, "--openai.model_name", MODEL, "--openai.api_key", "x",
        cwd=folder,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    return read_groups(out), chat


def test_a_group_of_multi_turn_episodes_with_feedback_scored_by_the_progressive_reward(
    processed: tuple[list[dict], ScriptedChat], tokenizer_dir: Path
) -> None:
    groups, _ = processed
    assert len(groups) == 2
    group = groups[0]
    assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == len(group["overrides"]) == 2
    by_turns = {marks["turns"]: i for i, marks in enumerate(group["overrides"])}
    two, one = by_turns[2], by_turns[1]

    roles = [m["role"] for m in group["messages"][two]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    feedback = group["messages"][two][3]["content"]
    assert feedback.startswith("Feedback:")
    assert "WHERE" in feedback  # the ODT names the missing filter
    assert [m["content"] for m in group["messages"][two] if m["role"] == "assistant"] == [WRONG, RIGHT]

    for i in (one, two):
        marks = group["overrides"][i]
        assert (marks["match"], marks["stop"], marks["set_advantage_to_zero"]) == (True, "done", False)
        assert marks["gold_error"] == marks["database_error"] == ""
        assert marks["reward"] == pytest.approx(group["scores"][i])
    assert group["overrides"][two]["k_star"] == 2
    assert group["scores"][one] > group["scores"][two] > 0  # an earlier match earns more

    # Only the assistant turns are trained: the tokens under the mask are the model's answers.
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    tokens, masks = group["tokens"][two], group["masks"][two]
    assert len(tokens) == len(masks)
    trained = tokenizer.decode([t for t, m in zip(tokens, masks, strict=True) if m != -100])
    assert WRONG in trained
    assert RIGHT in trained
    assert "Feedback" not in trained
    assert "CREATE TABLE" not in trained
    assert tokenizer.decode(tokens).count("<|im_start|>assistant") == 2


def test_a_failing_gold_is_scored_zero_and_marked_and_the_model_is_not_asked(
    processed: tuple[list[dict], ScriptedChat],
) -> None:
    """process mode keeps every group (it turns ensure_scores_are_not_same off); the unscored group is
    there with score 0, Atropos's set_advantage_to_zero and the reason."""
    groups, chat = processed
    group = groups[1]
    assert group["scores"] == [0.0, 0.0]
    for marks, masks, messages in zip(group["overrides"], group["masks"], group["messages"], strict=True):
        assert marks["set_advantage_to_zero"] is True
        assert marks["stop"] == "gold_invalid"
        assert "nowhere" in marks["gold_error"]
        assert all(m == -100 for m in masks)  # nothing of it is trained
        assert [m["role"] for m in messages] == ["system", "user"]  # the row's prompt, unanswered
    assert chat.requests_of(BAD_GOLD_QUESTION) == []
    assert len(chat.requests_of(QUESTION)) == 3  # two turns and one
