"""Refinement-environment throughput on Spider dev with a scripted policy (T = 4).

The policy answers turn k with the k-th published system's prediction for the question
(``../shared/data/predictions/spider-dev/model_{1..4}.txt``) and the fourth turn with the gold, so the
trajectories mix first-turn successes, late successes, invalid SQL and misses, as RL rollouts do.
Each episode resets a fresh ``SQLRefineEnv``; all share one gold store (one execution pool and gold
cache), as a trainer's environments do. With ``--group G`` every example runs G episodes, like the G
samples of one prompt in GRPO: the gold is prepared for the first and served to the other G - 1.

One run measures:

* cold: the first pass, gold queries executed and prepared (``gold`` stage, per episode in ms);
* warm: a second pass over the same examples with the gold prepared in the store (the answers'
  diagnoses the first pass kept are dropped: the warm pass diagnoses every answer as new);
* the share of step time per stage (extract, execute, compare, ODT, reward, feedback);
* baseline: a bare in-process loop executing the same predicted SQL with the same deadline and row
  cap (``Executor.run``), so the environment's overhead per turn is visible;
* with ``--in-process``, the same turns with each query run in the stepping thread (no worker process and no
  round trip to it): the floor the turn's own work (extraction, the ODT diagnosis, comparison, reward,
  feedback) sets, whatever the isolation costs.

    .venv/bin/python bench/env.py [--examples N] [--workers W] [--group G] [--batch B] [--in-process]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from _common import add_output_options, command_line, machine, provenance, spider_dev_missing, write_section
from progress_sql.data.tasks import load_task
from progress_sql.env import EnvConfig, SQLRefineEnv, prepare_golds, step_many
from progress_sql.env.core import make_store
from progress_sql.errors import GoldQueryError
from progress_sql.execution.engines import EngineRunners
from progress_sql.execution.executor import ExecLimits, Executor
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.gold import GoldStore
from progress_sql.types import Example, ExecResult

SECTION = "## Environment"
STAGES = ("extract", "execute", "compare", "odt", "reward", "feedback")


def scripted_responses(data: Path, examples: Sequence[Example]) -> list[list[str]]:
    folder = data / "predictions" / "spider-dev"
    predictions = [(folder / f"model_{k}.txt").read_text(encoding="utf-8").splitlines() for k in (1, 2, 3)]
    wrap = "<think>scripted</think><sql>{}</sql>".format
    return [[wrap(p[e.index]) for p in predictions] + [wrap(e.gold_sql)] for e in examples]


@dataclass(slots=True)
class PassResult:
    seconds: float = 0.0
    episodes: int = 0
    turn_seconds: list[float] = field(default_factory=list)
    #: Stage seconds over turns whose execution finished (timeouts excluded: they only measure the deadline).
    stages: dict[str, float] = field(default_factory=dict)
    timeouts: int = 0
    gold_seconds: float = 0.0


def run_pass(
    examples: Sequence[Example],
    scripts: Sequence[Sequence[str]],
    config: EnvConfig,
    store: GoldStore,
    group: int,
) -> PassResult:
    """One pass over every example, ``group`` episodes each: a fresh environment per episode, one store."""
    result = PassResult()
    start = time.perf_counter()
    for example, responses in [pair for pair in zip(examples, scripts, strict=True) for _ in range(group)]:
        env = SQLRefineEnv(config, store=store)
        try:
            env.reset(example)
        except GoldQueryError:
            continue
        finally:
            result.gold_seconds += env.stage_seconds.get("gold", 0.0)
        for response in responses:
            before = dict(env.stage_seconds)
            began = time.perf_counter()
            step = env.step(response)
            result.turn_seconds.append(time.perf_counter() - began)
            if step.info.exec_status == "timeout":
                result.timeouts += 1
            else:
                for name, total in env.stage_seconds.items():
                    result.stages[name] = result.stages.get(name, 0.0) + total - before.get(name, 0.0)
            if step.terminated or step.truncated:
                break
        result.episodes += 1
    result.seconds = time.perf_counter() - start
    return result


def run_batched_pass(
    examples: Sequence[Example],
    scripts: Sequence[Sequence[str]],
    config: EnvConfig,
    store: GoldStore,
    group: int,
    batch: int,
) -> PassResult:
    """:func:`run_pass` with the episodes stepped ``batch`` at a time, as a trainer steps a rollout batch:
    the golds of a batch prepared together (``prepare_golds``), then each turn of its active episodes in one
    ``step_many``; a turn's time is the batch turn's time over the turns in it (the amortised cost)."""
    result = PassResult()
    start = time.perf_counter()
    episodes = [pair for pair in zip(examples, scripts, strict=True) for _ in range(group)]
    for first in range(0, len(episodes), batch):
        chunk = episodes[first : first + batch]
        envs = [SQLRefineEnv(config, store=store) for _ in chunk]
        began = time.perf_counter()
        prepare_golds([(env, example) for env, (example, _) in zip(envs, chunk, strict=True)])
        active = []
        for env, (example, responses) in zip(envs, chunk, strict=True):
            try:
                env.reset(example)
            except GoldQueryError:
                continue
            active.append((env, responses))
        result.gold_seconds += time.perf_counter() - began
        turn = 0
        while active:
            before = [dict(env.stage_seconds) for env, _ in active]
            began = time.perf_counter()
            steps = step_many([(env, responses[turn]) for env, responses in active])
            each = (time.perf_counter() - began) / len(steps)
            # A batch turn with a query at its deadline measures the deadline (the batch waits for it): its
            # turns are left out of the per-turn times and stages, as a timed-out turn is in run_pass.
            waited = any(step.info.exec_status == "timeout" for step in steps)
            going = []
            for (env, responses), step, stages in zip(active, steps, before, strict=True):
                result.timeouts += step.info.exec_status == "timeout"
                if not waited:
                    result.turn_seconds.append(each)
                    for name, total in env.stage_seconds.items():
                        result.stages[name] = result.stages.get(name, 0.0) + total - stages.get(name, 0.0)
                if step.terminated or step.truncated:
                    result.episodes += 1
                else:
                    going.append((env, responses))
            active, turn = going, turn + 1
    result.seconds = time.perf_counter() - start
    return result


class InProcessRunner:
    """The floor a turn's own work sets (``--in-process``): the pool's interface, each job run by the executor in
    the stepping thread after the caller's ``meanwhile`` work. The executor's guards stay; the worker's (its
    address-space cap, the kill at the deadline, crash isolation) and the round trip to it go. A measurement of
    what is left of a turn without isolation, not a way to train."""

    size = 1

    def __init__(self) -> None:
        self._runners = EngineRunners()
        self.closed = False

    def worker_pids(self) -> list[int | None]:
        return [os.getpid()]

    def run(self, job: ExecJob) -> ExecResult:
        return self.run_many([job])[0]

    def run_many(
        self,
        jobs: Sequence[ExecJob],
        *,
        on_start: Callable[[int, int], object] | None = None,
        on_result: Callable[[int, ExecResult], object] | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> list[ExecResult]:
        if meanwhile is not None:
            meanwhile()
        results = []
        for index, job in enumerate(jobs):
            if on_start is not None:
                on_start(index, os.getpid())
            result = self._runners.run(job.db_path, job.sql, job.limits)
            results.append(result)
            if on_result is not None:
                on_result(index, result)
        return results

    def close(self) -> None:
        self.closed = True
        self._runners.close()

    def __enter__(self) -> InProcessRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bare_loop(examples: Sequence[Example], scripts: Sequence[Sequence[str]], limits: ExecLimits) -> list[float]:
    """Execute the predicted SQL of the first three turns in process, nothing else."""
    from progress_sql.sql.extract import extract

    executor = Executor()
    sqls = [(e.db_path, extract(r).sql or "") for e, rs in zip(examples, scripts, strict=True) for r in rs[:3]]
    times = []
    for db_path, sql in sqls:
        began = time.perf_counter()
        executor.run(db_path, sql, limits)
        times.append(time.perf_counter() - began)
    executor.close()
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--examples", type=int, default=None, help="first N Spider dev examples with a database")
    parser.add_argument("--workers", type=int, default=1, help="execution worker processes")
    parser.add_argument("--group", type=int, default=1, help="episodes per example (GRPO's G samples of a prompt)")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per SQL execution (RL-style deadline)")
    parser.add_argument(
        "--batch",
        type=int,
        default=1,
        help="episodes stepped together (step_many), as a trainer's rollout batch; 1: one at a time",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run each query in the stepping thread instead of a worker process (no isolation): the floor a "
        "turn's own work (extract, ODT diagnosis, comparison, reward, feedback) sets",
    )
    add_output_options(parser)
    args = parser.parse_args(argv)
    if spider_dev_missing(args.data_dir):
        return 1
    examples = [e for e in load_task("spider-dev", args.data_dir / "spider") if Path(e.db_path).is_file()]
    examples = examples[: args.examples] if args.examples else examples
    scripts = scripted_responses(args.data_dir, examples)
    info = machine()
    config = EnvConfig(max_turns=4, timeout_s=args.timeout)
    limits = ExecLimits(timeout_s=config.timeout_s, max_rows=config.max_rows)
    with InProcessRunner() if args.in_process else ExecutionPool(workers=args.workers) as pool:
        store = make_store(config, pool=pool, cache=GoldCache())
        if args.batch > 1:
            cold = run_batched_pass(examples, scripts, config, store, args.group, args.batch)
            store.forget_diagnoses()
            warm = run_batched_pass(examples, scripts, config, store, args.group, args.batch)
        else:
            cold = run_pass(examples, scripts, config, store, args.group)
            store.forget_diagnoses()
            warm = run_pass(examples, scripts, config, store, args.group)
    bare = bare_loop(examples, scripts, limits)

    title = (
        f"SQLRefineEnv on Spider dev, {len(examples)} examples x {args.group} episodes, T = 4, "
        + ("in process (no worker)" if args.in_process else f"{args.workers} worker(s)")
        + f", {args.timeout:g} s"
        + (f", stepped {args.batch} at a time" if args.batch > 1 else "")
    )
    table = Table(title=title)
    columns = ("pass", "episodes", "turns", "timeouts", "seconds", "episodes/s", "median ms/turn", "mean ms/turn",
               "gold ms/episode")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="right")
    rows = []
    for name, run in (("cold (gold executed)", cold), ("warm (gold prepared)", warm)):
        turns = len(run.turn_seconds)
        row = (name, str(run.episodes), str(turns), str(run.timeouts), f"{run.seconds:.2f}",
               f"{run.episodes / run.seconds:.1f}", f"{1000 * statistics.median(run.turn_seconds):.2f}",
               f"{1000 * run.seconds / turns:.2f}",
               f"{1000 * run.gold_seconds / max(1, run.episodes):.2f}")  # fmt: skip
        rows.append(row)
        table.add_row(*row)
    bare_median_ms = 1000 * statistics.median(bare)
    warm_median_ms = 1000 * statistics.median(warm.turn_seconds)
    stage_total = sum(warm.stages.get(s, 0.0) for s in STAGES)
    shares = {s: warm.stages.get(s, 0.0) / stage_total for s in STAGES}
    share_text = ", ".join(f"{s} {100 * v:.1f}%" for s, v in shares.items())
    console = Console(width=160)
    console.print(table)
    console.print(f"warm step time by stage (turns without a timeout): {share_text}")
    console.print(f"baseline: bare in-process execution, median {bare_median_ms:.3f} ms/query over {len(bare)} queries")

    if not args.no_doc:
        command = command_line("bench/env.py", argv)
        lines = [
            SECTION,
            "",
            "Scripted-policy trajectories through `SQLRefineEnv` (turn k answers with published system k's",
            f"prediction, turn 4 with the gold), {args.group} episode(s) per example, a fresh environment per",
            "episode, one shared gold store (pool, gold cache, prepared golds, schemas and prompt DDL).",
            *(
                [
                    f"Episodes stepped {args.batch} at a time (`step_many`: a turn's SQL in one batch to the workers; "
                    "a turn's time is the batch turn's time over its turns, a batch turn with a query at its deadline "
                    "counted in `timeouts`; the execute stage is then outside the environments' stage clocks)."
                ]
                if args.batch > 1
                else []
            ),
            "",
            *provenance(command, info),
            "",
            "| " + " | ".join(columns) + " |",
            "|---|" + "---:|" * (len(columns) - 1),
            *(f"| {' | '.join(row)} |" for row in rows),
            "",
            f"Warm step time by stage, over turns whose SQL finished before the deadline: {share_text}.",
            "",
            "Baseline in the same run: a bare in-process loop executing the same predicted SQL with the same",
            f"deadline and row cap: median {bare_median_ms:.3f} ms per query. A warm environment turn has a median",
            f"of {warm_median_ms:.2f} ms ({warm_median_ms / bare_median_ms:.0f}x): "
            + (
                "the query in the stepping thread (`--in-process`: no worker),"
                if args.in_process
                else "the isolated worker's round trip,"
            ),
            "the comparison, the ODT diagnosis, the reward and the feedback. Means are dominated by the queries",
            "that run into the deadline (the `timeouts` column).",
            "",
        ]
        write_section(args.doc, SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
