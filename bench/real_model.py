"""The packaged real model (SmolLM2-135M-Instruct) on this CPU: greedy generation of Spider dev answers in the
``small`` prompt style, batched (the transformers backend's default) against one conversation at a time
(the backend before batching), interleaved; and a warm-start step with every weight trained against the
top N layers only; and a training pass of the RL shape (4 sequences, logits over every position, as TRL
computes log-probabilities) in fp32 against bf16 autocast over the same fp32 weights (TRL's default,
on a CPU too); and TRL's fused LM head on an RL-shaped batch (16 sequences, only the completion scored),
as TRL runs it on a CPU against ``cpu_lm_head`` (completion positions only, 512-token tiles), and against that
with the frozen layers kept out of the autograd graph, each pass in a process of its own so that its peak memory
is its own; and glibc's mapping threshold (heap.py) on that pass and on greedy generation; and the transformers
backend's static KV cache against ``generate``'s dynamic one on a batch of the paper's long answers.

    .venv/bin/python bench/real_model.py --questions 32 --repeat 3 --threads 2
    .venv/bin/python bench/real_model.py --only precision --repeat 5
    .venv/bin/python bench/real_model.py --only lm-head --repeat 3
    .venv/bin/python bench/real_model.py --only heap --repeat 2
    .venv/bin/python bench/real_model.py --only cache --questions 16 --max-tokens 1024 --repeat 1

Needs the fetched model (``progress-sql models fetch smollm2-135m``) and ``../shared/data/spider``.
Prints the medians and their ratios; ``--write`` records them in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

Arm = TypeVar("Arm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/spider")
    parser.add_argument("--questions", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--layers", type=int, default=10, help="trainable top layers of the partial warm start")
    parser.add_argument("--sft-steps", type=int, default=2)
    parts = ("generation", "warm-start", "precision", "lm-head", "heap", "cache", "prefix")
    parser.add_argument("--only", choices=parts, default=None)
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    torch.set_num_threads(args.threads)
    from progress_sql.backends.base import GenerationConfig
    from progress_sql.backends.hf import TransformersBackend
    from progress_sql.prompts import PROMPT_STYLES, ChatTemplateFormat
    from progress_sql.training.pretrained import (
        ChatPrompts,
        WarmStartSettings,
        train_top_layers,
        warm_start_examples,
    )
    from progress_sql.training.sft import run_sft

    separate = {"precision": precision, "lm-head": lm_head, "heap": heap, "cache": kv_cache, "prefix": shared_prefix}
    if args.only in separate:
        separate[args.only](args)
        return
    style = PROMPT_STYLES["small"]
    examples, conversations = _heldout_conversations("small", args)
    config = GenerationConfig(max_tokens=args.max_tokens)
    batched = TransformersBackend.from_pretrained("smollm2-135m", batch_size=16)
    single = TransformersBackend(batched.model, batched.tokenizer, batch_size=1)
    if args.only != "warm-start":
        generation_speed(conversations, config, batched, single, args.repeat, len(examples))
    if args.only == "generation":
        return
    fmt = ChatTemplateFormat(batched.tokenizer, style)
    prompts = ChatPrompts(fmt, style)
    from progress_sql.data.tasks import resolve_task

    questions = next(n for n in ("train_spider.json", "train_spider.min.json") if (args.data_dir / n).is_file())
    _, train = resolve_task("spider-train", args.data_dir, questions=questions)
    train = [e for e in train if Path(e.db_path).is_file()]
    sequences = warm_start_examples(train, fmt, prompts, WarmStartSettings(examples=64), seed=0)
    step_seconds: dict[str, float] = {}
    arms = (("every weight", None, False), (f"top {args.layers} layers", args.layers, False),
            (f"top {args.layers} layers, bf16 autocast", args.layers, True))  # fmt: skip
    for label, layers, autocast in arms:
        model: Any = TransformersBackend.from_pretrained("smollm2-135m").model
        trainable = train_top_layers(model, layers)
        start = time.perf_counter()
        run_sft(model, batched.tokenizer, sequences, lr=3e-5, batch_size=8, max_steps=args.sft_steps, warmup=1,
                threads=args.threads, answer_logits_only=True, bf16_autocast=autocast)  # fmt: skip
        step_seconds[label] = (time.perf_counter() - start) / args.sft_steps
        print(f"warm-start step (8 sequences), {label} ({trainable:,} trainable): {step_seconds[label]:.1f} s")
    values = list(step_seconds.values())
    print(f"partial-layer speed-up: {values[0] / values[1]:.2f}x; bf16 autocast on top: {values[1] / values[2]:.2f}x")


def generation_speed(conversations: Any, config: Any, batched: Any, single: Any, repeat: int, count: int) -> None:
    times: dict[str, list[float]] = {"one at a time": [], "batches of 16": []}
    for _ in range(repeat):  # interleaved: the machine's noise falls on both alike
        for label, backend in (("one at a time", single), ("batches of 16", batched)):
            start = time.perf_counter()
            backend.generate(conversations, config)
            times[label].append(time.perf_counter() - start)
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, value in medians.items():
        print(f"generation, {label}: {value:.1f} s for {count} questions ({value / count:.2f} s each)")
    print(f"batched speed-up: {medians['one at a time'] / medians['batches of 16']:.2f}x")


def _heldout_conversations(style_name: str, args: argparse.Namespace) -> tuple[list[Any], list[Any]]:
    """``--questions`` held-out Spider dev examples and their opening conversations in prompt style ``style_name``."""
    from progress_sql.data.ddl import db_details
    from progress_sql.prompts import PROMPT_STYLES, opening_messages
    from progress_sql.training.pretrained import HeldOut, heldout_examples

    style = PROMPT_STYLES[style_name]
    examples = heldout_examples(HeldOut(size=args.questions), args.data_dir)
    return examples, [opening_messages(e, db_details(e.db_path, style.schema_profile), style=style) for e in examples]


def kv_cache(args: argparse.Namespace) -> None:
    """One batch of ``--questions`` Spider dev questions in the paper's prompt style (its full schema, reasoning
    first) to ``--max-tokens``, through the transformers backend with the dynamic cache and with the static one,
    interleaved; the answers compared."""
    from progress_sql.backends.base import GenerationConfig
    from progress_sql.backends.hf import TransformersBackend

    examples, conversations = _heldout_conversations("paper", args)
    config = GenerationConfig(max_tokens=args.max_tokens)
    static = TransformersBackend.from_pretrained("smollm2-135m", batch_size=args.questions)
    arms = {"dynamic (generate's default)": TransformersBackend(static.model, static.tokenizer,
                                                                 batch_size=args.questions, cache_implementation=None),
            "static": static}  # fmt: skip
    times: dict[str, list[float]] = {label: [] for label in arms}
    answers: dict[str, list[list[str]]] = {}
    for _ in range(args.repeat):
        for label, backend in arms.items():
            start = time.perf_counter()
            answers[label] = backend.generate(conversations, config)
            times[label].append(time.perf_counter() - start)
            print(f"{label}: {times[label][-1]:.1f} s")
    medians = {label: statistics.median(values) for label, values in times.items()}
    (dynamic, dynamic_answers), (_, static_answers) = zip(medians.values(), answers.values(), strict=True)
    same = sum(a == b for a, b in zip(dynamic_answers, static_answers, strict=True))
    print(f"{len(examples)} questions, up to {args.max_tokens} new tokens: dynamic {dynamic:.1f} s, static "
          f"{medians['static']:.1f} s ({dynamic / medians['static']:.2f}x); the same answers for {same} of "
          f"{len(examples)}")  # fmt: skip


def shared_prefix(args: argparse.Namespace) -> None:
    """The first ``--questions`` Spider dev questions as ``eval`` sends them (64 at a time, one database's
    questions in a row), the paper's prompt style, to ``--max-tokens``: 16 rows kept busy with the shared prefix
    (instructions and schema) stored once, against left-padded batches of 16 with the static cache, interleaved;
    the answers compared."""
    from progress_sql.backends.base import GenerationConfig
    from progress_sql.backends.hf import TransformersBackend
    from progress_sql.data.ddl import db_details
    from progress_sql.data.tasks import resolve_task
    from progress_sql.evaluation.run import GENERATION_BATCH
    from progress_sql.prompts import PROMPT_STYLES, opening_messages

    style = PROMPT_STYLES["paper"]
    _, examples = resolve_task("spider-dev", args.data_dir)
    examples = [e for e in examples if Path(e.db_path).is_file()][: args.questions]
    conversations = [opening_messages(e, db_details(e.db_path, style.schema_profile), style=style) for e in examples]
    config = GenerationConfig(max_tokens=args.max_tokens)
    shared = TransformersBackend.from_pretrained("smollm2-135m")
    arms = {"left-padded, static cache": TransformersBackend(shared.model, shared.tokenizer, share_prefix=False),
            "shared prefix": shared}  # fmt: skip
    times: dict[str, list[float]] = {label: [] for label in arms}
    answers: dict[str, list[list[str]]] = {}
    chunks = [conversations[i : i + GENERATION_BATCH] for i in range(0, len(conversations), GENERATION_BATCH)]
    for _ in range(args.repeat):
        for label, backend in arms.items():
            start = time.perf_counter()
            answers[label] = [texts for chunk in chunks for texts in backend.generate(chunk, config)]
            times[label].append(time.perf_counter() - start)
            print(f"{label}: {times[label][-1]:.1f} s")
    (padded, padded_answers), (prefixed, prefixed_answers) = (
        (statistics.median(times[label]), answers[label]) for label in arms
    )
    same = sum(a == b for a, b in zip(padded_answers, prefixed_answers, strict=True))
    databases = len({e.db_id for e in examples})
    print(f"{len(examples)} questions ({databases} databases), up to {args.max_tokens} new tokens: left-padded "
          f"{padded:.1f} s, shared prefix {prefixed:.1f} s ({padded / prefixed:.2f}x); the same answers for {same} "
          f"of {len(examples)}")  # fmt: skip


def precision(args: argparse.Namespace) -> None:
    """One forward and backward pass of 4 sequences of 448 tokens (the top layers trainable), fp32 against
    bf16 autocast, interleaved; prints the medians and their ratio."""
    import torch

    from progress_sql.models import load_causal_lm, resolve_model
    from progress_sql.training.pretrained import train_top_layers

    model = load_causal_lm(resolve_model("smollm2-135m"))
    train_top_layers(model, args.layers)
    model.train()
    ids = torch.randint(0, model.config.vocab_size, (4, 448), generator=torch.Generator().manual_seed(0))

    def one_pass(autocast: bool) -> float:
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=ids).logits
        torch.log_softmax(logits.float(), dim=-1)[..., 0].sum().backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - start

    times: dict[str, list[float]] = {"fp32": [], "bf16 autocast": []}
    one_pass(False)  # warm-up
    for _ in range(args.repeat):
        times["fp32"].append(one_pass(False))
        times["bf16 autocast"].append(one_pass(True))
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, value in medians.items():
        print(
            f"RL-shaped pass (4 x 448 tokens, top {args.layers} layers), {label}: {value:.2f} s (median of "
            f"{args.repeat})"
        )
    print(f"bf16 autocast / fp32: {medians['bf16 autocast'] / medians['fp32']:.2f}x")
    greedy_precision(model, args)


def greedy_precision(model: Any, args: argparse.Namespace) -> None:
    """Greedy generation of held-out answers (the measurement's generator, one batch of ``--questions``,
    ``--max-tokens`` new tokens), fp32 against bf16 autocast, interleaved; and how many answers agree."""
    from progress_sql.integrations.trl import ModelGenerator

    tokenizer, contexts = _sampler_inputs(args.questions, args.data_dir)
    trainer = _as_trainer(model)
    model.eval()
    times: dict[str, list[float]] = {"fp32": [], "bf16 autocast": []}
    answers: dict[str, list[Any]] = {}
    for _ in range(args.repeat):
        for label, autocast in (("fp32", False), ("bf16 autocast", True)):
            generator = ModelGenerator(tokenizer, args.max_tokens, temperature=0.0, bf16_autocast=autocast)
            start = time.perf_counter()
            answers[label] = generator(contexts, trainer)
            times[label].append(time.perf_counter() - start)
    medians = {label: statistics.median(values) for label, values in times.items()}
    for label, value in medians.items():
        print(f"greedy generation, {len(contexts)} questions x {args.max_tokens} tokens, {label}: {value:.1f} s")
    same = sum(a.tokens == b.tokens for a, b in zip(answers["fp32"], answers["bf16 autocast"], strict=True))
    print(
        f"bf16 autocast / fp32: {medians['bf16 autocast'] / medians['fp32']:.2f}x; identical answers: "
        f"{same} of {len(contexts)}"
    )


def _sampler_inputs(questions: int, data_dir: Path) -> tuple[Any, list[list[int]]]:
    """The packaged model's tokenizer and the token ids of ``questions`` held-out prompts (``small`` style)."""
    from progress_sql.backends.hf import load_tokenizer
    from progress_sql.models import resolve_model
    from progress_sql.prompts import PROMPT_STYLES, ChatTemplateFormat
    from progress_sql.training.pretrained import ChatPrompts, HeldOut, heldout_examples

    tokenizer = load_tokenizer(resolve_model("smollm2-135m"))
    style = PROMPT_STYLES["small"]
    prompts = ChatPrompts(ChatTemplateFormat(tokenizer, style), style)
    examples = heldout_examples(HeldOut(size=questions), data_dir)
    return tokenizer, [tokenizer(prompts(e), add_special_tokens=False).input_ids for e in examples]


def _as_trainer(model: Any) -> Any:
    """What ``ModelGenerator`` reads of a trainer: its model and an accelerator that unwraps it."""

    class Trainer:
        class accelerator:  # noqa: N801
            @staticmethod
            def unwrap_model(m: Any) -> Any:
                return m

    Trainer.model = model  # type: ignore[attr-defined]
    return Trainer


def _in_fresh_processes(
    arms: Sequence[Arm], job: Callable[[Arm], tuple[Callable[..., tuple[float, float]], tuple[Any, ...]]], repeat: int
) -> tuple[dict[Arm, list[float]], dict[Arm, list[float]]]:
    """Each arm's ``(function, arguments)`` run ``repeat`` times, arms interleaved, each run in a fresh spawned
    process (its peak memory is its own): the seconds and peaks the function returns, by arm."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    seconds: dict[Arm, list[float]] = {arm: [] for arm in arms}
    peaks: dict[Arm, list[float]] = {arm: [] for arm in arms}
    for _ in range(repeat):
        for arm in arms:
            function, arguments = job(arm)
            with context.Pool(1) as pool:
                took, peak = pool.apply(function, arguments)
            seconds[arm].append(took)
            peaks[arm].append(peak)
    return seconds, peaks


#: The RL pass of ``lm_head``: the recipe's per-device batch, prompt and completion lengths of a step.
LM_HEAD_BATCH, LM_HEAD_PROMPT, LM_HEAD_COMPLETION = 16, 600, 300


def lm_head(args: argparse.Namespace) -> None:
    """TRL's log-probability pass (``fused_lm_head=True``, bf16 autocast, TRL's gradient checkpointing,
    the top layers trainable) and its backward, on ``LM_HEAD_BATCH`` sequences: TRL's CPU path against
    ``cpu_lm_head``; each pass in a fresh process (its peak RSS above the loaded model's is its own),
    interleaved. Prints the medians and their ratios."""
    arms = ("TRL on a CPU", "cpu_lm_head", "cpu_lm_head, frozen layers outside the graph")

    def job(arm: str) -> tuple[Any, tuple[Any, ...]]:
        ours, frozen_outside = arm != "TRL on a CPU", arm.endswith("outside the graph")
        return _lm_head_pass, (ours, args.layers, args.threads, frozen_outside)

    seconds, peaks = _in_fresh_processes(arms, job, args.repeat)
    for arm in arms:
        print(
            f"RL log-prob pass + backward ({LM_HEAD_BATCH} x {LM_HEAD_PROMPT + LM_HEAD_COMPLETION} tokens, "
            f"{LM_HEAD_COMPLETION} scored), {arm}: {statistics.median(seconds[arm]):.2f} s, peak above the loaded "
            f"model {statistics.median(peaks[arm]):.2f} GB (medians of {args.repeat})"
        )
    for arm in arms[1:]:
        time_ratio = statistics.median(seconds[arm]) / statistics.median(seconds["TRL on a CPU"])
        peak_ratio = statistics.median(peaks[arm]) / statistics.median(peaks["TRL on a CPU"])
        print(f"{arm} / TRL: time {time_ratio:.2f}x, peak memory {peak_ratio:.2f}x")


#: heap(): the arms, each in a fresh process.
HEAP_ARMS = (
    ("generation", "glibc's default"),
    ("generation", "large blocks mapped, generation_heap (as runs do)"),
    ("generation", "large blocks mapped throughout"),
    ("RL pass", "glibc's default"),
    ("RL pass", "large blocks mapped (as runs do)"),
)


def heap(args: argparse.Namespace) -> None:
    """glibc's mapping threshold (heap.py), each arm in a fresh process, interleaved: greedy
    generation of ``--questions`` held-out answers x ``--max-tokens`` through the measurement's sampler
    (``ModelGenerator``, bf16 autocast) with glibc's default, with large blocks mapped (the sampler inside
    ``generation_heap``, as real-model runs do) and mapped throughout (what ``generation_heap`` avoids); and the
    RL pass of ``lm_head`` (``cpu_lm_head``, frozen layers outside the graph) with the default and mapped:
    its time and peak RSS above the loaded model."""

    def job(arm: tuple[str, str]) -> tuple[Any, tuple[Any, ...]]:
        work, setting = arm
        mapped = setting != "glibc's default"
        if work == "generation":
            scoped = not setting.endswith("throughout")
            return _heap_generation, (mapped, scoped, args.questions, args.max_tokens, args.threads, args.data_dir)
        return _lm_head_pass, (True, args.layers, args.threads, True, mapped)

    seconds, peaks = _in_fresh_processes(HEAP_ARMS, job, args.repeat)
    for arm in HEAP_ARMS:
        print(
            f"{arm[0]}, {arm[1]}: {statistics.median(seconds[arm]):.2f} s (each: "
            f"{', '.join(f'{value:.2f}' for value in seconds[arm])}), peak above the loaded model "
            f"{statistics.median(peaks[arm]):.2f} GB (medians of {args.repeat})"
        )


def _heap_generation(
    mapped: bool, scoped: bool, questions: int, max_tokens: int, threads: int, data_dir: Path
) -> tuple[float, float]:
    import contextlib
    import resource

    import torch

    import progress_sql.integrations.trl as trl_integration
    from progress_sql.heap import map_large_blocks
    from progress_sql.models import load_causal_lm, resolve_model

    torch.set_num_threads(threads)
    if mapped:
        assert map_large_blocks(), "glibc's mallopt is needed"
    if not scoped:
        trl_integration.generation_heap = contextlib.nullcontext  # type: ignore[assignment]
    tokenizer, contexts = _sampler_inputs(questions, data_dir)
    trainer = _as_trainer(load_causal_lm(resolve_model("smollm2-135m")).eval())
    generator = trl_integration.ModelGenerator(tokenizer, max_tokens, temperature=0.0, bf16_autocast=True)
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    start = time.perf_counter()
    generator(contexts, trainer)
    return time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20 - loaded


def _lm_head_pass(
    ours: bool, layers: int, threads: int, frozen_outside: bool = False, mapped: bool = False
) -> tuple[float, float]:
    import resource

    import torch
    from trl.trainer.utils import add_fused_lm_head

    from progress_sql.heap import map_large_blocks
    from progress_sql.integrations.trl import cpu_lm_head
    from progress_sql.models import load_causal_lm, resolve_model
    from progress_sql.training.pretrained import train_top_layers

    torch.set_num_threads(threads)
    if mapped:
        assert map_large_blocks(), "glibc's mallopt is needed"
    model = load_causal_lm(resolve_model("smollm2-135m"))
    train_top_layers(model, layers)
    add_fused_lm_head(model)
    model.activation_checkpointing_enable()  # as transformers' Trainer does: it makes the embeddings need a gradient
    if frozen_outside:
        model.disable_input_require_grads()  # what integrations.trl does at the start of training
    model.train()
    length = LM_HEAD_PROMPT + LM_HEAD_COMPLETION
    ids = torch.randint(0, model.config.vocab_size, (LM_HEAD_BATCH, length), generator=torch.Generator().manual_seed(0))
    attention = torch.ones_like(ids)
    labels = ids.clone()
    labels[:, :LM_HEAD_PROMPT] = -100
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # GB (ru_maxrss is in KB)
    start = time.perf_counter()
    with cpu_lm_head("cpu" if ours else "none"):  # the backward reads TRL's tile size too
        with torch.autocast("cpu", dtype=torch.bfloat16):
            log_probs = model(input_ids=ids, attention_mask=attention, labels=labels, fused_lm_head=True).log_probs
        log_probs.sum().backward()
    took = time.perf_counter() - start
    return took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20 - loaded


if __name__ == "__main__":
    main()
