"""The supervised warm start: examples (single- and two-turn), their token labels, and the loop.

Multi-turn RL needs multi-turn SFT (a model that never saw feedback answers turn 2 out of
distribution), so a share of the examples are a wrong first answer, its ODT feedback, then the gold;
only the final answer carries loss, and segments are tokenized as the rollout concatenates them.
Why and how: docs/architecture.md#the-supervised-warm-start-trainingsftpy.

>>> from progress_sql.data.embedded import real_questions
>>> from progress_sql.prompts import CompactFormat
>>> example = sft_examples(real_questions()[:1], CompactFormat(), seed=0, two_turn_share=1.0)[0]
>>> example.turns, "\\nF: " in example.text("<eos>")
(2, True)
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from progress_sql.data.schema import Schema
from progress_sql.errors import GoldQueryError
from progress_sql.execution.executor import ExecLimits
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.prompts import CompactFormat, ConversationFormat
from progress_sql.training.templates import folded_sql
from progress_sql.types import Example

IGNORE_INDEX = -100
#: Every query that checks a corruption, gold and corrupted SQL.
SFT_LIMITS = ExecLimits(timeout_s=2.0, max_rows=10_000)


@dataclass(frozen=True, slots=True)
class SftExample:
    """One training sequence: ``prompt``, then ``context`` (for a multi-turn example: answer,
    feedback, answer, feedback, ...; no loss), then ``completion``, the final answer (loss).
    Every answer is followed by the tokenizer's eos token."""

    prompt: str
    completion: str
    context: tuple[str, ...] = ()

    @property
    def turns(self) -> int:
        return 1 + len(self.context) // 2

    def text(self, eos: str) -> str:
        """The whole sequence as text, with ``eos`` after each answer (for reading, not training)."""
        parts = [self.prompt]
        for position, segment in enumerate(self.context):
            parts.append(segment + (eos if position % 2 == 0 else ""))
        return "".join([*parts, self.completion, eos])


# --------------------------------------------------------------------------------------------------
# Corruptions: plausible wrong first answers
# --------------------------------------------------------------------------------------------------

Corruption = Callable[[str, Schema, random.Random], "str | None"]
_WHERE = re.compile(
    r"\s+WHERE\s+.*?(?=\s+(?:GROUP\s+BY|ORDER\s+BY|LIMIT|INTERSECT|UNION|EXCEPT|HAVING)\b|\)|$)", re.IGNORECASE
)
_AGG = re.compile(r"\b(avg|min|max|sum)\s*\(", re.IGNORECASE)
_COMPARISON = re.compile(r"\s(>=|<=|>|<)\s")
_ORDER = re.compile(r"\bORDER\s+BY\s+([\w.\"]+)(\s+(?:ASC|DESC)\b)?", re.IGNORECASE)
_LIMIT = re.compile(r"\s+LIMIT\s+\d+", re.IGNORECASE)
_FROM = re.compile(r"\b(FROM|JOIN)\s+([\w\"]+)", re.IGNORECASE)
_WORD = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)(?![\w'\"(])|(?<=\.)([A-Za-z_]\w*)")
_NUMBER = re.compile(r"(?<=[=<>] )(\d+)\b")


def _drop_where(sql: str, schema: Schema, rng: random.Random) -> str | None:
    return _WHERE.sub("", sql, count=1) if _WHERE.search(sql) else None


def _swap_direction(sql: str, schema: Schema, rng: random.Random) -> str | None:
    match = _ORDER.search(sql)
    if not match:
        return None
    direction = (match.group(2) or "").strip().upper()
    replacement = f"ORDER BY {match.group(1)}" + ("" if direction == "DESC" else " DESC")
    return sql[: match.start()] + replacement + sql[match.end() :]


def _flip_comparison(sql: str, schema: Schema, rng: random.Random) -> str | None:
    flipped = {">": "<", "<": ">", ">=": "<", "<=": ">"}
    match = _COMPARISON.search(sql)
    if not match:
        return None
    return sql[: match.start(1)] + flipped[match.group(1)] + sql[match.end(1) :]


def _wrong_aggregate(sql: str, schema: Schema, rng: random.Random) -> str | None:
    match = _AGG.search(sql)
    if not match:
        return None
    other = rng.choice([fn for fn in ("avg", "min", "max", "sum") if fn != match.group(1).lower()])
    return sql[: match.start(1)] + other + sql[match.end(1) :]


def _column_words(sql: str, schema: Schema) -> list[re.Match[str]]:
    return [m for m in _WORD.finditer(sql) if schema.has_column(m.group(m.lastindex or 1))]


def _wrong_column(sql: str, schema: Schema, rng: random.Random) -> str | None:
    matches = _column_words(sql, schema)
    if not matches:
        return None
    match = rng.choice(matches)
    group = match.lastindex or 1
    name = match.group(group).lower()
    tables = schema.tables_with_column(name)
    others = sorted({c for t in tables for c in schema.tables[t] if c != name})
    if not others:
        return None
    return sql[: match.start(group)] + rng.choice(others) + sql[match.end(group) :]


def _wrong_table(sql: str, schema: Schema, rng: random.Random) -> str | None:
    match = _FROM.search(sql)
    if not match:
        return None
    others = sorted(t for t in schema.tables if t != match.group(2).strip('"').lower())
    if not others:
        return None
    return sql[: match.start(2)] + rng.choice(others) + sql[match.end(2) :]


def _drop_limit(sql: str, schema: Schema, rng: random.Random) -> str | None:
    return _LIMIT.sub("", sql, count=1) if _LIMIT.search(sql) else None


def _drop_distinct(sql: str, schema: Schema, rng: random.Random) -> str | None:
    return re.sub(r"\bDISTINCT\s+", "", sql, count=1, flags=re.IGNORECASE) if "distinct" in sql.lower() else None


def _change_number(sql: str, schema: Schema, rng: random.Random) -> str | None:
    match = _NUMBER.search(sql)
    if not match:
        return None
    value = int(match.group(1))
    return sql[: match.start(1)] + str(value + rng.choice((-1, 1)) * max(1, value // 10)) + sql[match.end(1) :]


#: Ways to make a plausible wrong first answer (name -> corruption; None when it does not apply).
CORRUPTIONS: Mapping[str, Corruption] = {
    "drop_where": _drop_where,
    "swap_direction": _swap_direction,
    "flip_comparison": _flip_comparison,
    "wrong_aggregate": _wrong_aggregate,
    "wrong_column": _wrong_column,
    "wrong_table": _wrong_table,
    "drop_limit": _drop_limit,
    "drop_distinct": _drop_distinct,
    "change_number": _change_number,
}


def sft_store() -> GoldStore:
    """The gold store that checks corruptions: the ``strict`` preset and :data:`SFT_LIMITS`, a
    one-worker pool of its own (the corrupted SQL runs isolated, like any generated SQL)."""
    return GoldStore(get_preset("strict"), limits=SFT_LIMITS)


def corrupt(example: Example, rng: random.Random, store: GoldStore | None = None) -> tuple[str, str] | None:
    """``(corruption name, wrong SQL)`` for ``example``: the first applicable corruption, in a random
    order, whose SQL differs from the gold and whose result does not match the gold's under the
    store's preset (:func:`sft_store` when none is given); or None."""
    own = store is None
    checker = store if store is not None else sft_store()
    try:
        schema = checker.schema(example.db_path)
        gold = " ".join(example.gold_sql.split())
        for name in rng.sample(sorted(CORRUPTIONS), len(CORRUPTIONS)):
            wrong = CORRUPTIONS[name](gold, schema, rng)
            if wrong is None or folded_sql(wrong) == folded_sql(gold):
                continue
            if not checker.judge(example, wrong).match:
                return name, " ".join(wrong.split())
    finally:
        if own:
            checker.close()
    return None


def sft_examples(
    examples: Sequence[Example],
    format: ConversationFormat,
    seed: int = 0,
    two_turn_share: float = 0.5,
    *,
    prompt: Callable[[Example], str] | None = None,
) -> list[SftExample]:
    """One SFT example per input example; about ``two_turn_share`` of them two-turn, their first
    answer a corrupted gold (never the gold: a rollout stops after a matching answer), and single-turn
    when no corruption mismatches (rare) or the gold cannot run; why:
    docs/architecture.md#the-supervised-warm-start-trainingsftpy. ``prompt(example)`` is the first
    prompt's text (default: the compact format's ``prompt``; a chat format needs one)."""
    rng = random.Random(seed)
    result: list[SftExample] = []
    if prompt is None:
        if not isinstance(format, CompactFormat):
            raise ValueError("sft_examples needs prompt= for a format other than the compact one")
        prompt = lambda e: format.prompt(e.db_id, e.question)  # noqa: E731
    with sft_store() as store:
        for example in examples:
            first = prompt(example)
            answer = format.answer(example.gold_sql)
            try:
                wrong = corrupt(example, rng, store) if rng.random() < two_turn_share else None
            except GoldQueryError:
                wrong = None
            if wrong is None:
                result.append(SftExample(first, answer))
                continue
            message = store.diagnosis(example, wrong[1], store.prepare(example)).feedback
            result.append(SftExample(first, answer, (format.answer(wrong[1]), format.feedback(message))))
    return result


# --------------------------------------------------------------------------------------------------
# Token ids and labels
# --------------------------------------------------------------------------------------------------


def encode(example: SftExample, tokenizer: Any) -> tuple[list[int], list[int]]:
    """``(input_ids, labels)``: every segment tokenized on its own, eos after each answer, labels
    -100 everywhere but the final answer and its eos."""
    eos = int(tokenizer.eos_token_id)

    def ids(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False).input_ids)

    input_ids = ids(example.prompt)
    for position, segment in enumerate(example.context):
        input_ids += ids(segment) + ([eos] if position % 2 == 0 else [])
    labels = [IGNORE_INDEX] * len(input_ids)
    final = [*ids(example.completion), eos]
    return input_ids + final, labels + final


# --------------------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SftStep:
    """What the progress callback receives after each optimizer step."""

    step: int
    loss: float
    seconds: float
    lr: float


@dataclass(frozen=True, slots=True)
class SftReport:
    """``final_loss`` is the mean of the last (up to) 10 step losses; ``seconds`` is the loop's
    wall time (encoding included)."""

    steps: int
    seconds: float
    final_loss: float
    losses: tuple[float, ...]
    examples: int
    epochs: float
    #: The step whose check reached the target (the cool-down ran from there); None: the whole budget ran.
    stopped_at_check: int | None = None


@dataclass(frozen=True, slots=True)
class EarlyStop:
    """When :func:`run_sft` may end before its budget: ``reached(step)`` (the model in eval mode)
    is asked at step ``first`` and every ``every`` steps after; once it returns True the learning
    rate falls linearly to zero over ``cooldown`` more steps."""

    reached: Callable[[int], bool]
    first: int
    every: int
    cooldown: int

    def __post_init__(self) -> None:
        if self.first < 1 or self.every < 1 or self.cooldown < 1:
            raise ValueError(
                f"EarlyStop needs first, every and cooldown >= 1, got {self.first}, {self.every}, {self.cooldown}"
            )

    def due(self, step: int) -> bool:
        """Whether the check runs after optimizer step ``step``."""
        return step >= self.first and (step - self.first) % self.every == 0


def _batch(rows: Sequence[tuple[list[int], list[int]]], pad: int) -> tuple[Any, Any, Any]:
    import torch

    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE_INDEX, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for row, (ids, labs) in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, : len(labs)] = torch.tensor(labs)
        mask[row, : len(ids)] = 1
    return input_ids, labels, mask


def _answer_loss(model: Any, input_ids: Any, mask: Any, labels: Any) -> Any:
    """The causal-LM loss (mean over labelled tokens) with the output head applied only at the
    positions that predict a label."""
    import torch

    # no cache: a training pass reads none (checkpointed layers would drop it with a warning)
    hidden = model.get_decoder()(input_ids=input_ids, attention_mask=mask, use_cache=False).last_hidden_state
    targets = labels[:, 1:]
    chosen = targets != IGNORE_INDEX
    logits = model.get_output_embeddings()(hidden[:, :-1][chosen])
    return torch.nn.functional.cross_entropy(logits.float(), targets[chosen])


def _epoch(lengths: Sequence[int], batch_size: int, rng: random.Random, pool: int = 16) -> list[list[int]]:
    """One epoch of batches: shuffled, then sorted by length within pools of ``pool`` batches so
    that a batch pads little, then the batches shuffled."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches: list[list[int]] = []
    for start in range(0, len(order), batch_size * pool):
        chunk = sorted(order[start : start + batch_size * pool], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def _done(step: int, max_steps: int | None, seconds: float, max_seconds: float | None) -> float:
    """How much of the budget is spent: the larger of the step and the time fractions."""
    steps_part = step / max_steps if max_steps else 0.0
    time_part = seconds / max_seconds if max_seconds else 0.0
    return min(1.0, max(steps_part, time_part))


def _lr_factor(step: int, warmup: int, cooldown: float, done: float) -> float:
    """Linear warm-up over ``warmup`` steps, constant, then a linear decay to zero over the last
    ``cooldown`` share of the budget.

    >>> _lr_factor(0, 50, 0.25, 0.0), _lr_factor(100, 50, 0.25, 0.5), _lr_factor(900, 50, 0.25, 0.875)
    (0.02, 1.0, 0.5)
    """
    factor = min(1.0, (step + 1) / max(1, warmup))
    if cooldown > 0 and done > 1 - cooldown:
        factor *= max(0.0, (1 - done) / cooldown)
    return factor


def run_sft(
    model: Any,
    tokenizer: Any,
    examples: Sequence[SftExample],
    *,
    lr: float = 2e-3,
    batch_size: int = 32,
    max_steps: int | None = 600,
    max_seconds: float | None = None,
    warmup: int = 50,
    cooldown: float = 0.25,
    seed: int = 0,
    weight_decay: float = 0.0,
    max_length: int = 512,
    threads: int | None = 1,
    progress: Callable[[SftStep], None] | None = None,
    stop: EarlyStop | None = None,
    answer_logits_only: bool = False,
    bf16_autocast: bool = False,
    gradient_checkpointing: bool = False,
) -> SftReport:
    """Train ``model`` on ``examples`` with AdamW: linear warm-up, a constant ``lr``, then a linear
    decay to zero over the last ``cooldown`` share of the budget; ``max_steps`` optimizer steps (a
    step budget: a seed gives the same model on any machine), or fewer when ``max_seconds`` runs out.
    Sequences longer than ``max_length`` tokens are skipped; the model is left in eval mode. With
    ``stop``, the budget is a ceiling: from ``stop.first`` every ``stop.every`` steps the model (in
    eval mode) is checked, and once ``stop.reached`` says so the run cools down linearly to zero over
    ``stop.cooldown`` more steps and ends. Why the defaults:
    docs/architecture.md#the-supervised-warm-start-trainingsftpy. With ``answer_logits_only`` the output
    head runs only where a label is (the same loss; a real model's 49k-token head over every prompt
    position was a fifth of a step); only parameters that require a gradient are optimised. With
    ``bf16_autocast`` the forward pass computes in bf16 over the fp32 weights (as TRL's RL does by
    default): about 0.6x the time on a CPU with bf16 instructions (docs/benchmarks.md). With
    ``gradient_checkpointing`` each trainable decoder layer keeps only its input for the backward pass
    and recomputes the rest (the same gradients; a real model's activations over 8 x 1,024 tokens were
    most of a step's memory)."""
    if max_steps is None and max_seconds is None:
        raise ValueError("run_sft needs max_steps or max_seconds")
    if not examples:
        raise ValueError("run_sft needs at least one example")
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    start = time.perf_counter()
    rows = [row for row in (encode(example, tokenizer) for example in examples) if len(row[0]) <= max_length]
    if not rows:
        raise ValueError(f"every example is longer than max_length={max_length} tokens")
    pad = int(tokenizer.pad_token_id)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=weight_decay)
    if gradient_checkpointing:
        # Non-reentrant: the frozen layers below hand the first trainable one an input that needs no
        # gradient, which reentrant checkpointing would take as "nothing to differentiate".
        _checkpointing_enable(model, {"use_reentrant": False})
        # ... and no input that needs a gradient (transformers adds one for reentrant checkpoints): the frozen
        # layers stay out of the autograd graph, and the backward pass stops at the lowest trainable layer.
        model.disable_input_require_grads()
    model.train()
    losses: list[float] = []
    batches: list[list[int]] = []
    step = 0
    stop_at: int | None = None  # set when ``stop`` is reached: the step the cool-down ends at
    stopped_from, stop_factor, factor = 0, 1.0, 1.0
    try:
        while max_steps is None or step < max_steps:
            if max_seconds is not None and time.perf_counter() - start >= max_seconds:
                break
            if not batches:
                batches = _epoch([len(ids) for ids, _ in rows], batch_size, rng)
            chosen = batches.pop()
            input_ids, labels, mask = _batch([rows[i] for i in chosen], pad)
            if stop_at is not None and step >= stop_at:
                break
            if stop_at is None:
                factor = _lr_factor(
                    step, warmup, cooldown, _done(step, max_steps, time.perf_counter() - start, max_seconds)
                )
            else:  # cooling down from the check that reached the target: linear to zero at stop_at
                factor = stop_factor * (stop_at - step) / (stop_at - stopped_from)
            current = lr * factor
            for group in optimizer.param_groups:
                group["lr"] = current
            with torch.autocast(input_ids.device.type, dtype=torch.bfloat16, enabled=bf16_autocast):
                if answer_logits_only:
                    loss = _answer_loss(model, input_ids, mask, labels)
                else:
                    # use_cache=False: a training pass reads no cache (and with checkpointed layers
                    # transformers would turn it off itself, with a warning in the log).
                    loss = model(input_ids=input_ids, attention_mask=mask, labels=labels, use_cache=False).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            step += 1
            value = float(loss.detach())
            losses.append(value if math.isfinite(value) else float("nan"))
            if progress is not None:
                progress(SftStep(step, value, time.perf_counter() - start, current))
            if stop is not None and stop_at is None and stop.due(step):
                model.eval()
                reached = stop.reached(step)
                model.train()
                if reached:
                    stopped_from, stop_factor = step, factor
                    stop_at = step + stop.cooldown if max_steps is None else min(max_steps, step + stop.cooldown)
    finally:
        model.eval()
        if gradient_checkpointing:
            _checkpointing_disable(model)
    tail = losses[-10:]
    return SftReport(
        steps=step,
        seconds=time.perf_counter() - start,
        final_loss=sum(tail) / len(tail) if tail else float("nan"),
        losses=tuple(losses),
        examples=len(rows),
        epochs=step * batch_size / len(rows),
        stopped_at_check=stopped_from if stop_at is not None else None,
    )


def _checkpointing_enable(model: Any, kwargs: dict[str, Any]) -> None:
    """Activation checkpointing on, under the name of the installed transformers (5.17, a GPU machine's,
    still calls it gradient checkpointing)."""
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def _checkpointing_disable(model: Any) -> None:
    disable = getattr(model, "activation_checkpointing_disable", None)
    (disable or model.gradient_checkpointing_disable)()


__all__ = [
    "CORRUPTIONS",
    "IGNORE_INDEX",
    "EarlyStop",
    "SftExample",
    "SftReport",
    "SftStep",
    "corrupt",
    "encode",
    "run_sft",
    "sft_examples",
]
