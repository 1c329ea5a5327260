"""ODT throughput on real model output: five published systems' Spider dev predictions against the golds.

One run times six stages on the same SQL, in one process (so figures are per core), each the median
of ``--repeat`` runs:

* sqlglot   ``sqlglot.parse_one(pred, read="sqlite")``, its errors caught: what a user of sqlglot calls
  to parse a query (the baseline of issue 35's goal, "diagnose at most 2x a sqlglot parse");
* parse     ``parse_sql`` on every prediction (sqlglot's parser behind our limits; it keeps one
  tokenizer and parser per thread, so it costs less than sqlglot's own entry point);
* build     ``build_odt`` on every prediction (parse + double-quote rule + profile tree);
* diagnose  ``diagnose(pred, gold)`` with each gold prepared once beforehand (the reward loop's case);
* diagnose+gold  the same, preparing the gold inside the loop for every pair;
* diagnose+schema  ``diagnose(pred, gold)`` with each gold prepared once with its database's schema, so
  that the prediction is also judged by SQLite (``EXPLAIN`` against the schema) and its columns are
  qualified through the schema: the environment's case (golds whose database is missing: no schema).

It prints a table (pairs/s, microseconds per pair, ratio to parse) and records it in
docs/benchmarks.md under "## ODT" with the command, date and machine. Run from the repository root:

    .venv/bin/python bench/odt.py [--pairs N] [--repeat R] [--interleave] [--clock wall|cpu] [--decompose]

On a shared machine, ``--interleave`` (the stages timed in rounds, so that a passing load weighs on
all of them alike) and ``--clock cpu`` (this process's CPU time) keep the ratios to parse time steadier.

``--decompose`` prints, instead, where ``diagnose``'s time goes relative to the parse (CPU time,
interleaved rounds, nothing written to the docs): the parse with and without the garbage collector,
each part of diagnose after the parse alone (the ODT of trees parsed beforehand, the comparison of
trees built beforehand, F_lex), each part right after the parse of the same prediction, and diagnose
itself. A part that costs more after a parse than alone, plus the parse, is the "interference" of
docs/benchmarks.md (ODT, issue 35 item 4, round two).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import sqlglot
from rich.console import Console
from rich.table import Table

from _common import DEFAULT_DATA, DEFAULT_DOC, machine, median_seconds, provenance, write_section
from progress_sql.data.schema import Schema, read_schema
from progress_sql.odt import build_odt, diagnose, prepare_gold
from progress_sql.odt.build import OdtNode, odt_of
from progress_sql.odt.score import compare_trees
from progress_sql.sql.lexical import lexical_similarity
from progress_sql.sql.normalize import parse_for_odt
from progress_sql.sql.parse import ParseFailure, parse_sql

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

    def sqlglot_parse() -> None:
        for pred in preds:
            with contextlib.suppress(Exception):  # sqlglot's errors, and its bugs on untrusted text
                sqlglot.parse_one(pred, read="sqlite")

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
        ("sqlglot", 'sqlglot.parse_one(pred, read="sqlite")', sqlglot_parse),
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


def _timed_rounds(stages: Sequence[tuple[str, Callable[[], None]]], repeat: int) -> dict[str, float]:
    """Median CPU seconds of each stage, the stages timed in rounds after one untimed pass of each.
    Each stage starts from a collected heap (untimed), so that the garbage a stage run with the
    collector off leaves (the parsed trees hold cycles) is not collected on the next stage's time."""
    for _, run in stages:
        run()
    times: dict[str, list[float]] = {name: [] for name, _ in stages}
    for _ in range(repeat):
        for name, run in stages:
            gc.collect()
            start = time.process_time()
            run()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def _without_gc(run: Callable[[], None]) -> Callable[[], None]:
    def timed() -> None:
        gc.disable()
        try:
            run()
        finally:
            gc.enable()

    return timed


def decompose(pairs: Sequence[tuple[str, int]], golds: Sequence[str], repeat: int) -> list[tuple[str, float]]:
    """Where diagnose's time goes relative to the parse: (stage, median CPU seconds) in print order."""
    preds = [pred for pred, _ in pairs]
    prepared = {index: prepare_gold(golds[index]) for index in {index for _, index in pairs}}
    references = [prepared[index] for _, index in pairs]
    # Parsed (with the double-quote rule, as diagnose parses) and built beforehand, for the parts alone.
    statements = [parse_for_odt(pred) for pred in preds]
    trees = [odt_of(tree) if not isinstance(tree, ParseFailure) else tree for tree in statements]
    built = [
        (pred, statement, tree, reference.tree)
        for pred, statement, tree, reference in zip(preds, statements, trees, references, strict=True)
        if isinstance(tree, OdtNode) and isinstance(reference.tree, OdtNode)
    ]

    def parse() -> None:
        for pred in preds:
            parse_sql(pred)

    def parse_quotes() -> None:
        for pred in preds:
            parse_for_odt(pred)

    def odt_alone() -> None:
        for _, statement, _, _ in built:
            odt_of(statement)

    def parse_then_odt() -> None:
        for pred, statement, _, _ in built:
            parse_sql(pred)
            odt_of(statement)

    def compare_alone() -> None:
        for _, _, tree, gold in built:
            compare_trees(tree, gold)

    def parse_then_compare() -> None:
        for pred, _, tree, gold in built:
            parse_sql(pred)
            compare_trees(tree, gold)

    def lexical_alone() -> None:
        for pred, reference in zip(preds, references, strict=True):
            lexical_similarity(pred, reference.grams)

    def parse_then_lexical() -> None:
        for pred, reference in zip(preds, references, strict=True):
            parse_sql(pred)
            lexical_similarity(pred, reference.grams)

    def parse_built() -> None:  # the parse of the pairs the ODT and compare stages use
        for pred, _, _, _ in built:
            parse_sql(pred)

    def diagnose_prepared() -> None:
        for pred, reference in zip(preds, references, strict=True):
            diagnose(pred, reference)

    stages: list[tuple[str, Callable[[], None]]] = [
        ("parse", parse),
        ("parse, GC off", _without_gc(parse)),
        ("parse + double-quote rule (diagnose's entry)", parse_quotes),
        ("parse (pairs with two trees)", parse_built),
        ("ODT of parsed trees, alone", odt_alone),
        ("parse, then ODT of the same (parsed) tree", parse_then_odt),
        ("compare of built trees, alone", compare_alone),
        ("parse, then compare of the same pair", parse_then_compare),
        ("F_lex, alone", lexical_alone),
        ("parse, then F_lex of the same pair", parse_then_lexical),
        ("diagnose", diagnose_prepared),
        ("diagnose, GC off", _without_gc(diagnose_prepared)),
    ]
    medians = _timed_rounds(stages, repeat)
    return [(name, medians[name]) for name, _ in stages]


#: Each part alone, and the stage that runs it right after the parse of the same pair.
_AFTER_A_PARSE = {
    "ODT of parsed trees, alone": "parse, then ODT of the same (parsed) tree",
    "compare of built trees, alone": "parse, then compare of the same pair",
    "F_lex, alone": "parse, then F_lex of the same pair",
}
#: The stages over the pairs whose prediction and gold both have a tree (the ODT and compare stages)
#: are measured against the parse of those pairs.
_OVER_BUILT_PAIRS = frozenset(
    {"parse (pairs with two trees)", *list(_AFTER_A_PARSE)[:2], *list(_AFTER_A_PARSE.values())[:2]}
)


def render_decomposition(rows: Sequence[tuple[str, float]], pairs: int, repeat: int) -> Table:
    seconds = dict(rows)
    table = Table(title=f"diagnose against parse, {pairs} pairs, CPU time, interleaved rounds, median of {repeat}")
    for header in ("stage", "median s", "µs/pair", "× parse", "after a parse: extra × parse"):
        table.add_column(header, justify="left" if header == "stage" else "right")
    for name, value in rows:
        parse = seconds["parse (pairs with two trees)" if name in _OVER_BUILT_PAIRS else "parse"]
        after = _AFTER_A_PARSE.get(name)
        # (parse, then the part) - parse - (the part alone): what the part costs beside a parse
        extra = f"{(seconds[after] - value - parse) / parse:+.2f}" if after else ""
        table.add_row(name, f"{value:.3f}", f"{value / pairs * 1e6:,.1f}", f"{value / parse:.2f}", extra)
    return table


#: The two baselines every stage is divided by: sqlglot's own parse (the goal's) and ``parse_sql``.
BASELINES = ("sqlglot", "parse")
RATIO_HEADERS = ("× sqlglot parse", "× parse_sql")


def ratios(stage: Stage, stages: Sequence[Stage]) -> list[str]:
    by_name = {entry.name: entry for entry in stages}
    return [f"{stage.seconds / by_name[name].seconds:.2f}" for name in BASELINES]


def render_table(stages: Sequence[Stage], pairs: int) -> Table:
    table = Table(title=f"ODT throughput, {pairs} prediction/gold pairs, single process")
    for header in ("stage", "what is timed", "median s", "pairs/s", "µs/pair", *RATIO_HEADERS):
        table.add_column(header, justify="left" if header in ("stage", "what is timed") else "right")
    for stage in stages:
        table.add_row(
            stage.name,
            stage.what,
            f"{stage.seconds:.3f}",
            f"{stage.per_second(pairs):,.0f}",
            f"{stage.microseconds(pairs):,.0f}",
            *ratios(stage, stages),
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
    by_name = {stage.name: stage for stage in stages}
    lines = [
        SECTION,
        "",
        "Throughput of the Oracle-guided Diagnostic Tree on real model output: the five published systems' "
        "Spider dev predictions (`../shared/data/predictions/spider-dev/model_{1..5}.txt`) against the dev "
        "golds, all stages on the same SQL in one process (per core). Baselines: sqlglot's `parse_one` (the "
        "goal's) and `parse_sql`.",
        "",
        *provenance(command, info),
        "",
        f"{pairs} pairs, median of {repeat} repeats ({how}), after one untimed warm-up pass.",
        "",
        "| stage | what is timed | median s | pairs/s | µs/pair | " + " | ".join(RATIO_HEADERS) + " |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for stage in stages:
        lines.append(
            f"| {stage.name} | `{stage.what}` | {stage.seconds:.3f} | {stage.per_second(pairs):,.0f} "
            f"| {stage.microseconds(pairs):,.0f} | " + " | ".join(ratios(stage, stages)) + " |"
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
    parser.add_argument(
        "--decompose", action="store_true", help="print where diagnose's time goes relative to the parse (no doc)"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1 or (args.pairs is not None and args.pairs < 1):
        parser.error("--pairs and --repeat must be positive")

    pairs = load_pairs(args.data_dir)
    if args.pairs is not None:
        pairs = pairs[: args.pairs]
    golds = load_golds(args.data_dir)
    info = machine()
    console = Console(width=150)
    if args.decompose:
        console.print(render_decomposition(decompose(pairs, golds, args.repeat), len(pairs), args.repeat))
        console.print(", ".join(f"{key}: {value}" for key, value in info.items()))
        return 0
    schemas = load_schemas(args.data_dir)
    stages = measure(pairs, golds, schemas, args.repeat, interleave=args.interleave, clock=args.clock)

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
