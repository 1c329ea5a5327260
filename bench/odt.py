"""ODT throughput on real model output: five published systems' Spider dev predictions against the golds.

One run times four stages on the same SQL, in one process (so figures are per core), each the median
of ``--repeat`` runs:

* parse     ``parse_sql`` on every prediction (the baseline: sqlglot's parser behind our limits);
* build     ``build_odt`` on every prediction (parse + double-quote rule + profile tree);
* diagnose  ``diagnose(pred, gold)`` with each gold prepared once beforehand (the reward loop's case);
* diagnose+gold  the same, preparing the gold inside the loop for every pair;
* diagnose+schema  ``diagnose(pred, gold)`` with each gold prepared once with its database's schema, so
  that the prediction is also judged by SQLite (``EXPLAIN`` against the schema) and its columns are
  qualified through the schema: the environment's case (golds whose database is missing: no schema).

It prints a table (pairs/s, microseconds per pair, ratio to parse) and records it in
docs/benchmarks.md under "## ODT" with the command, date and machine. Run from the repository root:

    .venv/bin/python bench/odt.py [--pairs N] [--repeat R] [--interleave] [--clock wall|cpu]

On a shared machine, ``--interleave`` (the stages timed in rounds, so that a passing load weighs on
all of them alike) and ``--clock cpu`` (this process's CPU time) keep the ratios to parse time steadier.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.table import Table

from _common import DEFAULT_DATA, DEFAULT_DOC, machine, median_seconds, provenance, write_section
from progress_sql.data.schema import Schema, read_schema
from progress_sql.odt import build_odt, diagnose, prepare_gold
from progress_sql.sql.parse import parse_sql

MODELS = (1, 2, 3, 4, 5)
TARGET_PER_SECOND = 1_000
SECTION = "## ODT"
Clock = Literal["wall", "cpu"]


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    what: str
    seconds: float  # median over repeats, for all pairs

    def per_second(self, pairs: int) -> float:
        return pairs / self.seconds

    def microseconds(self, pairs: int) -> float:
        return self.seconds / pairs * 1e6


def load_pairs(data: Path) -> list[tuple[str, int]]:
    """(prediction, gold index) for every model and dev question, model by model; exits 1 when absent."""
    gold_file = data / "spider" / "dev_gold.sql"
    folder = data / "predictions" / "spider-dev"
    missing = [p for p in (gold_file, *(folder / f"model_{m}.txt" for m in MODELS)) if not p.is_file()]
    if missing:
        sys.exit(
            f"error: benchmark data not found: {', '.join(map(str, missing))}\n"
            f"This benchmark needs ../shared/data beside the checkout (see ../shared/data/README.md), "
            f"or pass --data-dir."
        )
    pairs: list[tuple[str, int]] = []
    for model in MODELS:
        lines = (folder / f"model_{model}.txt").read_text(encoding="utf-8").splitlines()
        pairs.extend((sql, index) for index, sql in enumerate(lines))
    return pairs


def load_golds(data: Path) -> list[str]:
    lines = (data / "spider" / "dev_gold.sql").read_text(encoding="utf-8").splitlines()
    return [line.rpartition("\t")[0] for line in lines]


def load_schemas(data: Path) -> list[Schema | None]:
    """Each dev gold's database schema (None where the database is missing)."""
    lines = (data / "spider" / "dev_gold.sql").read_text(encoding="utf-8").splitlines()
    schemas: dict[str, Schema | None] = {}
    for db_id in {line.rpartition("\t")[2] for line in lines}:
        path = data / "spider" / "database" / db_id / f"{db_id}.sqlite"
        schemas[db_id] = read_schema(path) if path.is_file() else None
    return [schemas[line.rpartition("\t")[2]] for line in lines]


def measure(
    pairs: Sequence[tuple[str, int]],
    golds: Sequence[str],
    schemas: Sequence[Schema | None],
    repeat: int,
    *,
    interleave: bool = False,
    clock: Clock = "wall",
) -> list[Stage]:
    """Median seconds per stage. ``interleave`` times the stages in rounds (one repeat of each stage
    per round), so that a load that comes and goes on a shared machine weighs on every stage alike;
    ``clock="cpu"`` counts this process's CPU time instead of wall time."""
    preds = [pred for pred, _ in pairs]
    gold_sql = [golds[index] for _, index in pairs]
    prepared = {index: prepare_gold(golds[index]) for index in {index for _, index in pairs}}
    references = [prepared[index] for _, index in pairs]
    with_schema = {index: prepare_gold(golds[index], schemas[index]) for index in {index for _, index in pairs}}
    schema_references = [with_schema[index] for _, index in pairs]

    def parse() -> None:
        for pred in preds:
            parse_sql(pred)

    def build() -> None:
        for pred in preds:
            build_odt(pred)

    def diagnose_prepared() -> None:
        for pred, reference in zip(preds, references, strict=True):
            diagnose(pred, reference)

    def diagnose_with_gold() -> None:
        for pred, gold in zip(preds, gold_sql, strict=True):
            diagnose(pred, prepare_gold(gold))

    def diagnose_with_schema() -> None:
        for pred, reference in zip(preds, schema_references, strict=True):
            diagnose(pred, reference)

    stages = (
        ("parse", "parse_sql(pred)", parse),
        ("build", "build_odt(pred)", build),
        ("diagnose", "diagnose(pred, gold prepared once)", diagnose_prepared),
        ("diagnose+gold", "prepare_gold(gold) + diagnose(pred, gold)", diagnose_with_gold),
        ("diagnose+schema", "diagnose(pred, gold prepared once with its schema)", diagnose_with_schema),
    )
    for _, _, run in stages:  # warm up every code path once, untimed
        run()
    if not interleave and clock == "wall":
        return [Stage(name, what, median_seconds(run, repeat)) for name, what, run in stages]
    timer = time.perf_counter if clock == "wall" else time.process_time
    times: list[list[float]] = [[] for _ in stages]
    order = [(index, stage) for _ in range(repeat) for index, stage in enumerate(stages)]
    if not interleave:  # every repeat of a stage, then the next stage (the default order)
        order.sort(key=lambda entry: entry[0])
    for index, (_, _, run) in order:
        start = timer()
        run()
        times[index].append(timer() - start)
    return [Stage(name, what, statistics.median(times[index])) for index, (name, what, _) in enumerate(stages)]


def render_table(stages: Sequence[Stage], pairs: int) -> Table:
    baseline = stages[0]
    table = Table(title=f"ODT throughput, {pairs} prediction/gold pairs, single process")
    for header in ("stage", "what is timed", "median s", "pairs/s", "µs/pair", "× parse time"):
        table.add_column(header, justify="left" if header in ("stage", "what is timed") else "right")
    for stage in stages:
        table.add_row(
            stage.name,
            stage.what,
            f"{stage.seconds:.3f}",
            f"{stage.per_second(pairs):,.0f}",
            f"{stage.microseconds(pairs):,.0f}",
            f"{stage.seconds / baseline.seconds:.2f}",
        )
    return table


def markdown(
    stages: Sequence[Stage],
    pairs: int,
    repeat: int,
    command: str,
    info: dict[str, str],
    how: str = "each stage repeated in turn, wall time (time.perf_counter)",
) -> str:
    baseline = stages[0]
    by_name = {stage.name: stage for stage in stages}
    lines = [
        SECTION,
        "",
        "Throughput of the Oracle-guided Diagnostic Tree on real model output: the five published systems' "
        "Spider dev predictions (`../shared/data/predictions/spider-dev/model_{1..5}.txt`) against the dev "
        "golds, all stages on the same SQL in one process (per core). Baseline: `parse_sql` alone.",
        "",
        *provenance(command, info),
        "",
        f"{pairs} pairs, median of {repeat} repeats ({how}), after one untimed warm-up pass.",
        "",
        "| stage | what is timed | median s | pairs/s | µs/pair | × parse time |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for stage in stages:
        lines.append(
            f"| {stage.name} | `{stage.what}` | {stage.seconds:.3f} | {stage.per_second(pairs):,.0f} "
            f"| {stage.microseconds(pairs):,.0f} | {stage.seconds / baseline.seconds:.2f} |"
        )
    verdicts = []
    for name in ("diagnose", "diagnose+gold", "diagnose+schema"):
        rate = by_name[name].per_second(pairs)
        verdict = "met" if rate >= TARGET_PER_SECOND else "NOT met"
        verdicts.append(f"{name} {rate:,.0f}/s: {verdict}")
    lines += [
        "",
        f"Target: >= {TARGET_PER_SECOND:,} diagnoses per second per core ({'; '.join(verdicts)}).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=None, help="number of pairs (default: all, 5 x 1034)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repeats per stage; the median is reported")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC, help="where the results are recorded")
    parser.add_argument("--no-doc", action="store_true", help="print only; do not update --doc")
    parser.add_argument(
        "--interleave", action="store_true", help="time the stages in rounds, one repeat of each per round"
    )
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall", help="wall time (default) or this process's CPU time"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or (args.pairs is not None and args.pairs < 1):
        parser.error("--pairs and --repeat must be positive")

    pairs = load_pairs(args.data_dir)
    if args.pairs is not None:
        pairs = pairs[: args.pairs]
    golds = load_golds(args.data_dir)
    schemas = load_schemas(args.data_dir)
    info = machine()
    stages = measure(pairs, golds, schemas, args.repeat, interleave=args.interleave, clock=args.clock)

    console = Console(width=150)
    console.print(render_table(stages, len(pairs)))
    console.print(", ".join(f"{key}: {value}" for key, value in info.items()))
    if not args.no_doc:
        shown_args = sys.argv[1:] if argv is None else list(argv)
        command = shlex.join([".venv/bin/python", "bench/odt.py", *shown_args])
        how = (
            f"{'interleaved rounds' if args.interleave else 'each stage repeated in turn'}, "
            f"{'wall time (time.perf_counter)' if args.clock == 'wall' else 'CPU time (time.process_time)'}"
        )
        write_section(args.doc, SECTION, markdown(stages, len(pairs), args.repeat, command, info, how))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
