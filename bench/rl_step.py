"""The environment's share of one RL step at scale: 512 trajectories x up to 4 turns on 1 and 2 execution
workers, with the cost per query and per trajectory, and what they project to on a larger node.

One step is what a GRPO trainer hands the environment between two generations: ``--prompts`` new
prompts (64) x ``--group`` samples (8), each an episode of up to ``--turns`` turns (4). The prompts are
the synthetic dataset's questions (``progress_sql.cluster.synthetic``: one small generated SQLite
database per prompt, seed 0), so nothing here needs ../shared. Each sample follows a scripted policy
drawn per turn (seeded): the gold, the gold written otherwise, the dataset's prediction (55% right), a
query that fails, or a wrong answer (the gold's rows cut to none), so the group's trajectories mix
first-turn matches, late matches and misses.

Every repeat is a fresh step: a new gold store and cache (new prompts: their golds run and are
prepared within the step), fresh environments, the turns stepped as a batch (``step_many``: every
active episode's SQL in one batch per turn) or, as the request-driven adapters do, one episode at a
time (``--alone``). ``--hosted-threads N`` adds the request-driven adapters' way: every trajectory a
``HostedEpisode`` played on a pool of N threads (SkyRL steps its environments on ``max_env_workers``
threads, 32 by default), each turn one call, once with each call its own round trip and once through
the coalescer of concurrent steps (env/coalesce.py), the two interleaved repeat by repeat; its table
adds the pool's batches per turn played (round trips to the workers). ``--diagnosed-after`` adds, interleaved
with each row, the same steps with every ODT diagnosis made after its result (planned, run, then taken: the
order before the diagnoses overlapped the queries). Measured per step: wall
seconds; the parent's CPU seconds (reading, judging, ODT, reward, feedback); the workers' CPU seconds
(``/proc/<pid>/stat``, user + system) and the queries they ran, hence the worker CPU per query;
trajectories per second. CPU times hold on a busy machine where wall times do not: the projection uses them.

    .venv/bin/python bench/rl_step.py [--prompts 64] [--group 8] [--turns 4] [--repeat 3] [--alone]
        [--diagnosed-after] [--hosted-threads 32]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from _common import add_output_options, command_line, machine, provenance, write_section
from progress_sql.cluster.synthetic import SyntheticConfig, generate_dataset
from progress_sql.data.loaders import load_spider
from progress_sql.env import EnvConfig, SQLRefineEnv, StepResult, prepare_golds, step_many
from progress_sql.env.core import make_store, run_turns
from progress_sql.execution.jobs import ExecJob
from progress_sql.execution.pool import ExecutionPool, OnResult, OnStart
from progress_sql.integrations.hosted import HostedEpisode, HostSettings
from progress_sql.judge.cache import GoldCache
from progress_sql.types import Example, ExecResult

SECTION = "## One RL step at scale (issue 35)"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class CountingPool(ExecutionPool):
    """The real pool, counting the jobs it runs and the batches it is handed (called from many threads)."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers=workers)
        self.jobs = 0
        self.batches = 0
        self._count = threading.Lock()

    def run_many(
        self,
        jobs: Sequence[ExecJob],
        *,
        on_start: OnStart | None = None,
        on_result: OnResult | None = None,
        meanwhile: Callable[[], object] | None = None,
    ) -> list[ExecResult]:
        with self._count:
            self.jobs += len(jobs)
            self.batches += 1
        return super().run_many(jobs, on_start=on_start, on_result=on_result, meanwhile=meanwhile)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def scripts(examples: Sequence[Example], predictions: Sequence[str], group: int, turns: int) -> list[list[str]]:
    """Per episode (prompt-major), its responses turn by turn."""
    rng = random.Random(0)
    wrap = "<think>scripted</think><sql>{}</sql>".format
    episodes = []
    for example, prediction in zip(examples, predictions, strict=True):
        gold = example.gold_sql
        choices = (
            gold,
            gold.replace("SELECT", "select"),
            prediction,
            gold.replace("SELECT ", "SELECT missing_column , ", 1),
            f"SELECT * FROM ({gold}) LIMIT 0",
        )
        for _ in range(group):
            episodes.append([wrap(rng.choices(choices, weights=(2, 1, 3, 2, 2))[0]) for _ in range(turns)])
    return episodes


@dataclass(frozen=True, slots=True)
class StepFigures:
    wall_s: float
    parent_cpu_s: float
    worker_cpu_s: float
    queries: int
    turns: int
    trajectories: int
    matched: int
    batches: int = 0


def _diagnosed_after(pairs: Sequence[tuple[SQLRefineEnv, str]], *, alone: bool) -> list[StepResult]:
    """The turns stepped as before the diagnoses overlapped the queries: planned, their SQL run (one batch,
    or one round trip each), then taken with the results, so that every diagnosis follows its result."""
    if alone:
        steps = []
        for env, response in pairs:  # one episode after another, as env.step did
            turn = env.plan(response)
            steps.append(env.take(turn, env.store.run_pred(turn.example, turn.sql) if turn.sql else None))
        return steps
    planned = [(env, env.plan(response)) for env, response in pairs]
    results = run_turns(planned)
    return [env.take(turn, result) for (env, turn), result in zip(planned, results, strict=True)]


def one_step(
    examples: Sequence[Example],
    responses: list[list[str]],
    group: int,
    turns: int,
    workers: int,
    *,
    alone: bool,
    overlap: bool = True,
) -> StepFigures:
    config = EnvConfig(max_turns=turns, timeout_s=5.0)
    with CountingPool(workers) as pool:
        pool.run_many([ExecJob(examples[0].db_path, "SELECT 1")] * workers)  # workers started before the clock
        pool.jobs = 0
        pids = [pid for pid in pool.worker_pids() if pid is not None]
        worker_before = sum(cpu_seconds(pid) for pid in pids)
        wall, cpu = time.perf_counter(), time.process_time()
        store = make_store(config, pool=pool, cache=GoldCache())
        envs = [SQLRefineEnv(config, store=store) for _ in responses]
        episodes = [(env, examples[position // group]) for position, env in enumerate(envs)]
        if not alone:
            prepare_golds(episodes)  # the step's new golds in one batch
        for env, example in episodes:
            env.reset(example)
        active = list(range(len(envs)))
        ended: dict[int, StepResult] = {}
        played = 0
        for turn in range(turns):
            pairs = [(envs[i], responses[i][turn]) for i in active]
            if not overlap:
                steps = _diagnosed_after(pairs, alone=alone)
            elif alone:
                steps = [env.step(response) for env, response in pairs]
            else:
                steps = step_many(pairs)
            played += len(steps)
            for i, step in zip(active, steps, strict=True):
                if step.terminated or step.truncated:
                    ended[i] = step
            active = [i for i in active if i not in ended]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        worker_cpu = sum(cpu_seconds(pid) for pid in pids) - worker_before
        queries = pool.jobs
    matched = sum(step.info.match for step in ended.values())
    return StepFigures(wall, cpu, worker_cpu, queries, played, len(envs), matched)


def hosted_step(
    examples: Sequence[Example],
    responses: list[list[str]],
    group: int,
    turns: int,
    workers: int,
    threads: int,
    *,
    coalesce: bool,
) -> StepFigures:
    """One step as a request-driven adapter plays it: each trajectory a :class:`HostedEpisode` (reset, then
    one call per turn) on a pool of ``threads`` threads; with ``coalesce`` the calls that overlap share
    batches to the workers, without it each call is its own round trip."""
    config = EnvConfig(max_turns=turns, timeout_s=5.0)
    settings = HostSettings(config, step_rewards=False, execution_workers=workers)
    with CountingPool(workers) as pool:
        pool.run_many([ExecJob(examples[0].db_path, "SELECT 1")] * workers)  # workers started before the clock
        pool.jobs = pool.batches = 0
        pids = [pid for pid in pool.worker_pids() if pid is not None]
        worker_before = sum(cpu_seconds(pid) for pid in pids)
        wall, cpu = time.perf_counter(), time.process_time()
        store = make_store(config, pool=pool, cache=GoldCache())

        def play(position: int) -> tuple[int, bool]:
            episode = HostedEpisode(settings, examples[position // group], coalesce=coalesce)
            episode.env = SQLRefineEnv(episode.config, store=store)  # the counting pool, not the process's own
            episode.start()
            for played, response in enumerate(responses[position], start=1):
                step = episode.step(response)
                if step.done:
                    return played, bool(step.metadata.get("match"))
            return len(responses[position]), False

        with ThreadPoolExecutor(threads) as executor:
            outcomes = list(executor.map(play, range(len(responses))))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        worker_cpu = sum(cpu_seconds(pid) for pid in pids) - worker_before
    played = sum(turns_played for turns_played, _ in outcomes)
    matched = sum(match for _, match in outcomes)
    return StepFigures(wall, cpu, worker_cpu, pool.jobs, played, len(responses), matched, pool.batches)


def hosted_table(rows: Sequence[tuple[str, int, list[StepFigures]]], threads: int) -> list[str]:
    """The hosted modes' medians: per turn played, the pool's batches (round trips to the workers)."""
    table = [
        "| stepping | workers | threads | trajectories | turns | queries | matched | pool batches | batches/turn "
        "| wall s | trajectories/s | parent CPU ms/turn |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, workers, figures in rows:
        first = figures[0]
        wall = statistics.median(f.wall_s for f in figures)
        batches = statistics.median(f.batches for f in figures)
        parent = statistics.median(f.parent_cpu_s for f in figures)
        table.append(
            f"| {label} | {workers} | {threads} | {first.trajectories} | {first.turns} | {first.queries} "
            f"| {first.matched} | {batches:.0f} | {batches / max(first.turns, 1):.3f} | {wall:.2f} "
            f"| {first.trajectories / wall:.0f} | {1000 * parent / max(first.turns, 1):.3f} |"
        )
    return table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--alone", action="store_true", help="also step each episode alone (one round trip per turn)")
    parser.add_argument("--diagnosed-after", action="store_true",
                        help="also step with each diagnosis after its result (the order before they overlapped), "
                        "interleaved repeat by repeat")  # fmt: skip
    parser.add_argument("--hosted-threads", type=int, default=0, metavar="N",
                        help="also play every trajectory as a HostedEpisode on N threads, each call alone and "
                        "coalesced, interleaved")  # fmt: skip
    add_output_options(parser)
    args = parser.parse_args(argv)
    info = machine()
    with tempfile.TemporaryDirectory() as folder:
        dataset = generate_dataset(folder, SyntheticConfig(databases=args.prompts, questions_per_database=1))
        examples = load_spider(dataset.questions, dataset.databases)
        predictions = dataset.predictions.read_text(encoding="utf-8").splitlines()
        responses = scripts(examples, predictions, args.group, args.turns)
        modes = [("batched (step_many)", False)] + ([("alone (one step per call)", True)] if args.alone else [])
        rows: list[tuple[str, int, list[StepFigures]]] = []
        for label, alone in modes:
            for workers in args.workers:
                orders = (True, False) if args.diagnosed_after else (True,)
                runs: dict[bool, list[StepFigures]] = {overlap: [] for overlap in orders}
                for _ in range(args.repeat):  # interleaved, so the machine's load falls on both alike
                    for overlap in orders:
                        runs[overlap].append(
                            one_step(examples, responses, args.group, args.turns, workers, alone=alone,
                                     overlap=overlap)
                        )  # fmt: skip
                rows.append((label, workers, runs[True]))
                if args.diagnosed_after:
                    rows.append((f"{label}, diagnosed after the results", workers, runs[False]))
                for row_label, _, figures in rows[-len(orders) :]:
                    print(row_label, workers, figures)
        hosted: list[tuple[str, int, list[StepFigures]]] = []
        for workers in args.workers if args.hosted_threads else []:
            alone_figures: list[StepFigures] = []
            coalesced_figures: list[StepFigures] = []
            for _ in range(args.repeat):  # interleaved: A B A B, so the machine's load falls on both alike
                for coalesce, figures in ((False, alone_figures), (True, coalesced_figures)):
                    figures.append(
                        hosted_step(examples, responses, args.group, args.turns, workers, args.hosted_threads,
                                    coalesce=coalesce)
                    )  # fmt: skip
            hosted += [("hosted, one round trip per call", workers, alone_figures),
                       ("hosted, coalesced", workers, coalesced_figures)]  # fmt: skip
            for label, _, figures in hosted[-2:]:
                print(label, workers, figures)
    table = [
        "| stepping | workers | trajectories | turns | queries | matched | wall s | trajectories/s | parent CPU s "
        "| worker CPU s | worker CPU ms/query | parent CPU ms/turn |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    medians: dict[tuple[str, int], dict[str, float]] = {}
    for label, workers, figures in rows:
        first = figures[0]
        m = {
            "wall": statistics.median(f.wall_s for f in figures),
            "parent": statistics.median(f.parent_cpu_s for f in figures),
            "worker": statistics.median(f.worker_cpu_s for f in figures),
        }
        medians[(label, workers)] = m
        table.append(
            f"| {label} | {workers} | {first.trajectories} | {first.turns} | {first.queries} | {first.matched} "
            f"| {m['wall']:.2f} | {first.trajectories / m['wall']:.0f} | {m['parent']:.2f} | {m['worker']:.2f} "
            f"| {1000 * m['worker'] / max(first.queries, 1):.3f} | {1000 * m['parent'] / max(first.turns, 1):.3f} |"
        )
    print("\n".join(table))
    hosted_lines = hosted_table(hosted, args.hosted_threads) if hosted else []
    if hosted_lines:
        print("\n".join(hosted_lines))
        for workers in args.workers:
            walls = {
                label: statistics.median(f.wall_s for f in figures) for label, w, figures in hosted if w == workers
            }
            speedup = walls["hosted, one round trip per call"] / walls["hosted, coalesced"]
            print(f"{workers} worker(s), {args.hosted_threads} threads: trajectories per second, coalesced / "
                  f"one round trip per call: {speedup:.2f}x")  # fmt: skip
    if args.no_doc:
        return 0
    base = rows[0][2][0]
    one = medians[(rows[0][0], args.workers[0])]
    per_query_ms = 1000 * one["worker"] / max(base.queries, 1)
    per_turn_ms = 1000 * one["parent"] / max(base.turns, 1)
    lines = [
        SECTION,
        "",
        f"One synthetic GRPO step's environment work: {args.prompts} prompts x G = {args.group} samples = "
        f"{args.prompts * args.group} trajectories of up to T = {args.turns} scripted turns (bench/rl_step.py's "
        "docstring: the policy and the synthetic databases), each repeat a fresh step (new gold store and cache: "
        f"the golds run inside the step). Medians of {args.repeat}. CPU seconds are the parent's "
        "(`time.process_time`) and the execution workers' (`/proc/<pid>/stat`).",
        "",
        *provenance(command_line("bench/rl_step.py", argv), info),
        "",
        *table,
        "",
        *([*hosted_lines, ""] if hosted_lines else []),
        f"Per query {per_query_ms:.3f} ms of worker CPU and per turn {per_turn_ms:.3f} ms of the stepping "
        "process's CPU (1 worker, batched).",
    ]
    write_section(args.doc, SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
