"""The supervised warm start: corruptions, two-turn examples, label masks, and a short run."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from progress_sql.data.embedded import embedded_databases
from progress_sql.data.schema import read_schema
from progress_sql.execution.executor import execute
from progress_sql.judge.compare import get_preset, judge
from progress_sql.odt import CATALOGUE
from progress_sql.prompts import CompactFormat
from progress_sql.training.sft import CORRUPTIONS, IGNORE_INDEX, SftExample, encode, sft_examples
from progress_sql.training.templates import TemplateDataset

CODES = {spec.name for spec in CATALOGUE} | {"VALUES", "PARSE_ERROR"}


@pytest.mark.parametrize(
    ("name", "sql", "expected"),
    [
        ("drop_where", "SELECT name FROM singer WHERE age > 30 ORDER BY age", "SELECT name FROM singer ORDER BY age"),
        (
            "swap_direction",
            "SELECT name FROM singer ORDER BY age DESC LIMIT 1",
            "SELECT name FROM singer ORDER BY age LIMIT 1",
        ),
        (
            "swap_direction",
            "SELECT name FROM singer ORDER BY age LIMIT 1",
            "SELECT name FROM singer ORDER BY age DESC LIMIT 1",
        ),
        ("swap_direction", "SELECT name FROM singer ORDER BY age ASC", "SELECT name FROM singer ORDER BY age DESC"),
        ("flip_comparison", "SELECT count(*) FROM singer WHERE age > 30", "SELECT count(*) FROM singer WHERE age < 30"),
        ("drop_limit", "SELECT name FROM singer ORDER BY age LIMIT 1", "SELECT name FROM singer ORDER BY age"),
        ("drop_distinct", "SELECT DISTINCT country FROM singer", "SELECT country FROM singer"),
        ("drop_where", "SELECT count(*) FROM singer", None),
        ("swap_direction", "SELECT name FROM singer", None),
    ],
)
def test_corruptions(name: str, sql: str, expected: str | None) -> None:
    schema = read_schema(embedded_databases()["concert_singer"])
    assert CORRUPTIONS[name](sql, schema, random.Random(0)) == expected


def test_random_corruptions_change_the_intended_part() -> None:
    schema = read_schema(embedded_databases()["concert_singer"])
    rng = random.Random(0)
    aggregate = CORRUPTIONS["wrong_aggregate"]("SELECT avg(age) FROM singer", schema, rng)
    assert aggregate is not None
    assert re.fullmatch(r"SELECT (min|max|sum)\(age\) FROM singer", aggregate)
    column = CORRUPTIONS["wrong_column"]("SELECT name FROM singer WHERE age > 30", schema, rng)
    assert column is not None
    assert column != "SELECT name FROM singer WHERE age > 30"
    assert column.startswith("SELECT ")
    assert " FROM singer WHERE " in column
    table = CORRUPTIONS["wrong_table"]("SELECT count(*) FROM singer", schema, rng)
    assert table is not None
    assert table != "SELECT count(*) FROM singer"
    assert table.startswith("SELECT count(*) FROM ")
    number = CORRUPTIONS["change_number"]("SELECT count(*) FROM singer WHERE age > 30", schema, rng)
    assert number in {"SELECT count(*) FROM singer WHERE age > 27", "SELECT count(*) FROM singer WHERE age > 33"}


def test_label_mask_covers_only_the_final_answer(tokenizer: Any) -> None:
    example = SftExample(
        prompt="Q [concert_singer] How many singers?\nA:",
        completion=" <think></think><sql>SELECT count(*) FROM singer</sql>",
        context=(" <think></think><sql>SELECT count(*) FROM stadium</sql>", "\nF: FROM_OR_JOIN_TABLE_MISMATCH\nA:"),
    )

    def ids(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False).input_ids)

    eos = tokenizer.eos_token_id
    context = ids(example.prompt) + ids(example.context[0]) + [eos] + ids(example.context[1])
    final = [*ids(example.completion), eos]
    input_ids, labels = encode(example, tokenizer)
    assert input_ids == context + final
    assert labels == [IGNORE_INDEX] * len(context) + final
    assert input_ids.count(eos) == 2
    single = SftExample(prompt=example.prompt, completion=example.completion)
    input_ids, labels = encode(single, tokenizer)
    assert labels == [IGNORE_INDEX] * len(ids(single.prompt)) + final
    assert single.turns == 1
    assert example.turns == 2


def test_two_turn_examples_carry_feedback_and_a_wrong_first_answer(dataset: TemplateDataset) -> None:
    fmt = CompactFormat()
    strict = get_preset("strict")
    chosen = dataset.train[:40] + dataset.real_train[:10]
    examples = sft_examples(chosen, fmt, seed=0, two_turn_share=1.0)
    assert len(examples) == len(chosen)
    two_turn = [(source, sft) for source, sft in zip(chosen, examples, strict=True) if sft.turns == 2]
    assert len(two_turn) >= 0.9 * len(chosen)
    for source, sft in two_turn:
        assert sft.prompt == fmt.prompt(source.db_id, source.question)
        assert sft.completion == fmt.answer(source.gold_sql)
        first, feedback = sft.context
        assert feedback.startswith("\nF: ")
        assert feedback.endswith("\nA:")
        codes = feedback[len("\nF: ") : -len("\nA:")].split()
        assert codes
        assert set(codes) <= CODES
        assert "\nF: " in sft.text("<eos>")
        wrong = first[len(" <think></think><sql>") : -len("</sql>")]
        assert wrong != " ".join(source.gold_sql.split())
        gold = [execute(source.db_path, query) for query in strict.gold_queries(source.gold_sql)]
        assert not judge(strict, source.gold_sql, gold, execute(source.db_path, wrong)).match


def test_two_turn_share(dataset: TemplateDataset) -> None:
    fmt = CompactFormat()
    chosen = dataset.train[:200]
    assert all(e.turns == 1 for e in sft_examples(chosen, fmt, seed=0, two_turn_share=0.0))
    half = sum(e.turns == 2 for e in sft_examples(chosen, fmt, seed=0, two_turn_share=0.5))
    assert 70 <= half <= 130
    assert sft_examples(chosen, fmt, seed=4) == sft_examples(chosen, fmt, seed=4)


def test_run_sft_reduces_the_loss(dataset: TemplateDataset, tokenizer: Any, torch_one_thread: Any) -> None:
    from progress_sql.training.model import build_model
    from progress_sql.training.sft import SftStep, run_sft

    examples = sft_examples(dataset.train[:256], CompactFormat(), seed=0)
    model = build_model(tokenizer, "tiny", seed=0)
    seen: list[SftStep] = []
    report = run_sft(
        model, tokenizer, examples, lr=2e-3, batch_size=16, max_steps=20, warmup=5, cooldown=0.0, progress=seen.append
    )
    assert report.steps == 20
    assert len(report.losses) == 20
    assert [s.step for s in seen] == list(range(1, 21))
    assert sum(report.losses[-3:]) / 3 < 0.7 * sum(report.losses[:3]) / 3
    assert seen[0].lr < seen[-1].lr == pytest.approx(2e-3)
    assert not model.training
    cooled: list[SftStep] = []
    run_sft(model, tokenizer, examples[:32], batch_size=8, max_steps=8, warmup=1, cooldown=0.5, progress=cooled.append)
    rates = [s.lr for s in cooled]
    assert rates[:4] == [2e-3] * 4
    assert rates[4:] == sorted(rates[4:], reverse=True)
    assert rates[-1] == pytest.approx(2e-3 * 0.25)
    # EarlyStop: checked at steps 3, 5, 7...; reached at 5 (the model in eval mode during the check), then
    # the rate falls linearly to zero over 4 more steps and the run ends, well before its budget
    from progress_sql.training.sft import EarlyStop

    asked: list[tuple[int, bool]] = []

    def reached(step: int) -> bool:
        asked.append((step, model.training))
        return step >= 5

    stopped: list[SftStep] = []
    early = run_sft(
        model, tokenizer, examples[:32], batch_size=8, max_steps=100, warmup=1, cooldown=0.25,
        progress=stopped.append, stop=EarlyStop(reached, first=3, every=2, cooldown=4),
    )  # fmt: skip
    assert asked == [(3, False), (5, False)]
    assert (early.steps, early.stopped_at_check) == (9, 5)
    assert [s.lr for s in stopped][5:] == pytest.approx([2e-3 * f for f in (1.0, 0.75, 0.5, 0.25)])
    never = run_sft(
        model, tokenizer, examples[:32], batch_size=8, max_steps=6, warmup=1, cooldown=0.5,
        stop=EarlyStop(lambda _step: False, first=2, every=2, cooldown=4),
    )  # fmt: skip
    assert (never.steps, never.stopped_at_check) == (6, None)  # never reached: the budget's own schedule
    with pytest.raises(ValueError, match="EarlyStop needs"):
        EarlyStop(reached, first=0, every=1, cooldown=1)
    timed = run_sft(model, tokenizer, examples, batch_size=16, max_steps=None, max_seconds=0.0)
    assert timed.steps == 0
    with pytest.raises(ValueError, match="max_steps or max_seconds"):
        run_sft(model, tokenizer, examples, max_steps=None, max_seconds=None)


def test_the_answer_only_head_gives_the_models_own_loss(torch_one_thread: Any) -> None:
    """``run_sft(answer_logits_only=True)`` applies the output head only where a label is: the same loss
    and the same gradients as the model's own causal-LM loss, for less work."""
    from progress_sql.training.sft import _answer_loss, _batch
    from tests.tiny_lm import tiny_model, tiny_tokenizer

    torch = torch_one_thread
    tokenizer = tiny_tokenizer(["Q [music] How many singers?\nA: <sql>SELECT count(*) FROM singer</sql>"])
    model = tiny_model(tokenizer)
    rows = [encode(SftExample("Q [music] How many?\nA:", " <sql>SELECT 1</sql>"), tokenizer),
            encode(SftExample("Q [music] How many singers are there?\nA:", " <sql>SELECT count(*)</sql>",
                              (" <sql>SELECT 2</sql>", "\nF: VALUES\nA:")), tokenizer)]  # fmt: skip
    input_ids, labels, mask = _batch(rows, int(tokenizer.pad_token_id))
    own = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
    own.backward()
    expected = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    ours = _answer_loss(model, input_ids, mask, labels)
    ours.backward()
    assert float(ours) == pytest.approx(float(own), rel=1e-5)
    for name, parameter in model.named_parameters():
        assert torch.allclose(parameter.grad, expected[name], atol=1e-6), name


def test_bf16_autocast_trains_fp32_weights(torch_one_thread: Any) -> None:
    """The warm start's bf16 autocast computes in bf16 and keeps (and updates) fp32 weights."""
    from progress_sql.training.sft import run_sft
    from tests.tiny_lm import tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer(["how many singers? SELECT count(*) FROM singer"])
    model = tiny_model(tokenizer)
    before = [p.detach().clone() for p in model.parameters()]
    examples = [SftExample("how many singers?", " SELECT count(*) FROM singer")] * 4
    report = run_sft(model, tokenizer, examples, lr=1e-3, batch_size=2, max_steps=2, warmup=1, bf16_autocast=True)
    assert report.steps == 2
    assert all(p.dtype == torch_one_thread.float32 for p in model.parameters())
    assert any(not torch_one_thread.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))


def test_gradient_checkpointing_gives_the_same_steps_with_the_lower_layers_frozen(torch_one_thread: Any) -> None:
    """Recomputing the trainable layer's activations changes no loss and no weight, also when the
    frozen layer below hands it an input without a gradient (the partial-layer recipe); the model is
    left without checkpointing (generation after the warm start runs as before)."""
    from progress_sql.training.pretrained import train_top_layers
    from progress_sql.training.sft import run_sft
    from tests.tiny_lm import tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer(["how many singers? SELECT count(*) FROM singer WHERE age > 20"])
    examples = [SftExample("how many singers?", " SELECT count(*) FROM singer"),
                SftExample("singers over 20?", " SELECT * FROM singer WHERE age > 20")] * 3  # fmt: skip
    runs = []
    for checkpointing in (False, True):
        model = tiny_model(tokenizer)
        train_top_layers(model, 1)
        report = run_sft(model, tokenizer, examples, lr=1e-2, batch_size=2, max_steps=3, warmup=1,
                         answer_logits_only=True, gradient_checkpointing=checkpointing)  # fmt: skip
        assert not model.is_activation_checkpointing
        runs.append((report.losses, [p.detach().clone() for p in model.parameters()]))
    (plain_losses, plain_weights), (checkpointed_losses, checkpointed_weights) = runs
    assert checkpointed_losses == pytest.approx(plain_losses, rel=1e-6)
    assert any(
        not torch_one_thread.equal(p, q) for p, q in zip(plain_weights, tiny_model(tokenizer).parameters(), strict=True)
    )
    for plain, checkpointed in zip(plain_weights, checkpointed_weights, strict=True):
        assert torch_one_thread.allclose(plain, checkpointed, atol=1e-6)
