"""The default SFT warm start on the embedded data, measured: templates + tokenizer + tiny model +
SFT with two-turn augmentation, then greedy EX on the held-out sets at several points of training.

    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE .venv/bin/python bench/sft_default.py --seconds 240

Checkpoints are snapshots of the weights taken during training (every ``--checkpoint-every``
seconds of SFT) and evaluated afterwards, so evaluation does not eat into the SFT time budget.
Needs the ``[trl]`` extra (torch, transformers, tokenizers); does not need ``../shared``.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import time
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from progress_sql.data.embedded import embedded_databases
from progress_sql.prompts import CompactFormat
from progress_sql.training.evaluate import execution_accuracy, greedy_sql
from progress_sql.training.model import build_model, parameter_count
from progress_sql.training.sft import SftStep, run_sft, sft_examples
from progress_sql.training.templates import build_dataset
from progress_sql.training.tokenizer import train_tokenizer, training_texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=240.0, help="SFT wall-time budget")
    parser.add_argument("--steps", type=int, default=None, help="SFT step cap (default: none)")
    parser.add_argument("--size", default="tiny")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--cooldown", type=float, default=0.25, help="final share of the budget with lr decay")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--two-turn", type=float, default=0.5, help="share of two-turn SFT examples")
    parser.add_argument("--real-upsample", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--show-errors", type=int, default=0, help="print N wrong held-out answers per set")
    parser.add_argument("--save", default=None, help="save the final model and tokenizer to this folder")
    parser.add_argument("--checkpoint-every", type=float, default=30.0, help="seconds of SFT between snapshots")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    wall = time.perf_counter()

    fmt = CompactFormat()
    t0 = time.perf_counter()
    data = build_dataset(embedded_databases(), seed=args.seed)
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    examples = sft_examples(data.train + data.real_train * args.real_upsample, fmt, args.seed, args.two_turn)
    t_sft_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    tokenizer = train_tokenizer(training_texts(data.train + data.real_train, fmt))
    t_tok = time.perf_counter() - t0
    model = build_model(tokenizer, args.size, args.seed)
    turns = collections.Counter(e.turns for e in examples)
    print(
        f"data {t_data:.1f}s: train {len(data.train)} templates + {len(data.real_train)} real x{args.real_upsample}; "
        f"SFT examples {len(examples)} ({turns[2]} two-turn) built in {t_sft_data:.1f}s; "
        f"tokenizer {len(tokenizer)} tokens in {t_tok:.1f}s; model {args.size} {parameter_count(model):,} params"
    )

    snapshots: list[tuple[int, float, dict[str, Any]]] = []
    next_snapshot = [args.checkpoint_every]

    def progress(step: SftStep) -> None:
        if step.seconds >= next_snapshot[0]:
            snapshots.append((step.step, step.seconds, {k: v.clone() for k, v in model.state_dict().items()}))
            next_snapshot[0] += args.checkpoint_every
        if step.step % 50 == 0:
            print(f"  step {step.step:4d}  {step.seconds:6.1f}s  loss {step.loss:.4f}", flush=True)

    report = run_sft(
        model,
        tokenizer,
        examples,
        lr=args.lr,
        cooldown=args.cooldown,
        batch_size=args.batch_size,
        max_steps=args.steps,
        max_seconds=args.seconds,
        seed=args.seed,
        threads=args.threads,
        progress=progress,
    )
    if not snapshots or snapshots[-1][0] != report.steps:
        snapshots.append((report.steps, report.seconds, {k: v.clone() for k, v in model.state_dict().items()}))
    print(
        f"SFT: {report.steps} steps, {report.seconds:.1f}s, {report.epochs:.1f} epochs, "
        f"final loss {report.final_loss:.4f} ({report.seconds / max(1, report.steps):.3f} s/step)"
    )

    sets = {
        "new_combo": data.heldout_new_combo,
        "new_value": data.heldout_new_value,
        "real_test": data.real_test,
        "real_train": data.real_train,
    }
    print()
    header = f"{'step':>5} {'SFT s':>6} " + " ".join(f"{name + ' EX (n)':>20}" for name in sets) + f" {'eval s':>7}"
    print(header)
    last: dict[str, Any] = {}
    for step, seconds, state in snapshots:
        model.load_state_dict(state)
        t0 = time.perf_counter()
        cells = []
        for name, items in sets.items():
            texts = greedy_sql(model, tokenizer, fmt, items)
            ex = execution_accuracy(items, texts)
            last[name] = (items, ex, texts)
            cells.append(f"{100 * ex.ex:5.1f} ±{100 * ex.standard_error:4.1f} ({ex.n:3d})")
        print(
            f"{step:5d} {seconds:6.1f} "
            + " ".join(f"{cell:>20}" for cell in cells)
            + f" {time.perf_counter() - t0:7.1f}"
        )

    print("\nper-family EX at the end (held-out template sets):")
    for name in ("new_combo", "new_value"):
        items, ex, _ = last[name]
        totals: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        for item, match in zip(items, ex.matches, strict=True):
            totals[item.difficulty or "?"][0] += int(match)
            totals[item.difficulty or "?"][1] += 1
        print(f"  {name}: " + ", ".join(f"{f} {c}/{n}" for f, (c, n) in sorted(totals.items())))
    for name in ("new_combo", "new_value", "real_test"):
        items, ex, texts = last[name]
        wrong = [(item, text) for item, text, match in zip(items, texts, ex.matches, strict=True) if not match]
        for item, text in wrong[: args.show_errors]:
            print(f"  [{name} {item.difficulty}] {item.question}\n     gold {item.gold_sql}\n     pred {text.strip()}")
    if args.save:
        model.save_pretrained(args.save)
        tokenizer.save_pretrained(args.save)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\ntotal wall {time.perf_counter() - wall:.1f}s, peak RSS {peak:.0f} MiB, threads {args.threads}")


if __name__ == "__main__":
    main()
