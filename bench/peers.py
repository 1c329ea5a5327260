"""Our environment against the peers' own code on the same GRPO-step workloads (issue 35, item 1).

Systems, each in a fresh process of its own (peak memory and CPU time are its process tree's):

* ``progress-sql``: hosted episodes (``integrations/hosted.py``: the execution pool with its deadline,
  read-only connections and row caps, gold store, ODT feedback, progressive reward), every turn of a
  trajectory played until its answer matches, stepped on 32 threads as SkyRL steps environments;
* ``progress-sql-final``: the same with only each trajectory's final answer (T = 1), the work the
  single-turn peers below do;
* ``progress-sql-batched`` and ``progress-sql-batched-final``: the same episodes stepped as a trainer
  that holds the whole step does (TRL's multi-turn rollout): the golds in one batch, then each turn of
  the running episodes in one ``step_many``;
* ``skyrl-gym``: skyrl-gym 0.4.0's own ``text2sql`` environment (``skyrl_gym.envs.sql.env.SQLEnv``), the
  same turns as ``<sql>`` probes and the last one as the ``<solution>``, on 32 threads;
* ``sql-r1``: SQL-R1's verl reward (``synsql.compute_score``, vendored in bench/peers/sql_r1), called in
  turn for every trajectory's final answer as its RewardManager does;
* ``nemo-gym``: NeMo Gym's ``bird_sql`` resource server's ``verify`` (vendored), every final answer at
  once, in the nemo_gym side environment (bench/peers/nemo_gym_runner.py);
* ``arctic-text2sql-r1``: Arctic-Text2SQL-R1's ``evaluate_sqls_parallel`` (vendored excerpt), its own
  defaults (a 20-process pool, ``func_timeout`` 10 s), on the final answers;
* ``omnisql``: OmniSQL's ``evaluate_sqls_parallel`` loaded from a checkout given with ``--omnisql``
  (the repository has no licence file, so it is not vendored), the same defaults.

Workloads, built from ../shared/data: (a) 64 Spider dev prompts x 8 samples, up to 4 turns whose answers
are the five published systems' predictions; (b) the same with 2% of the trajectories answering once
with a pathological query (a cross join of billions of rows, an endless recursive CTE); (c) 64 BIRD
superhero prompts x 8 samples whose answers are golds of the database's questions (the sample's own
gold or another question's). A trajectory's latency is the time from the step's start (every
trajectory submitted at once, as a GRPO step does) to its verdict.

    .venv/bin/python bench/peers.py [--quick] [--systems a,b] [--workloads a,b,c] [--cap 120] \\
        [--omnisql PATH/TO/OmniSQL]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil

from _common import ROOT, add_output_options, command_line, machine, provenance, spider_dev_missing, write_section

SECTION = "## Peers"
PEERS = Path(__file__).resolve().parent / "peers"
#: The stepping threads of SkyRL's generator (``environment.skyrl_gym.max_env_workers``), used for both envs.
STEP_THREADS = 32
#: Arctic-Text2SQL-R1's and OmniSQL's ``run_eval`` defaults.
EVAL_PROCESSES, EVAL_TIMEOUT_S = 20, 10
#: Rows a pathological cross join enumerates (minutes to hours of SQLite time).
CROSS_JOIN_ROWS = 1e11
ENDLESS_CTE = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
PATHOLOGICAL_EVERY = 50  # one trajectory in 50: 2%

Emit = Callable[[int, float], None]


# ---- workloads (pure data: what every system is given) ------------------------------------------------


def largest_table(db_file: Path) -> tuple[str, int]:
    """The database's table with the most rows, and that count."""
    with sqlite3.connect(f"file:{db_file}?mode=ro", uri=True) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        counts = [(name, conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]) for name in names]
    return max(counts, key=lambda pair: pair[1])


def pathological_query(db_file: Path, kind: int) -> str:
    """A query that runs for minutes: a cross join of the largest table (kind 0, when it has rows enough)
    or an endless recursive CTE."""
    table, rows = largest_table(db_file)
    if kind % 2 or rows < 20:
        return ENDLESS_CTE
    copies = math.ceil(math.log(CROSS_JOIN_ROWS) / math.log(rows))
    return "SELECT count(*) FROM " + ", ".join(f'"{table}" AS t{i}' for i in range(copies))


def spider_workload(data_dir: Path, prompts: int, samples: int, pathological: bool) -> dict[str, Any]:
    """Workload (a), or (b) with ``pathological``: sample s of prompt p answers 1 + (p + s) % 4 times,
    turn k with published system (s + k) % 5 + 1's prediction."""
    spider = data_dir / "spider"
    dev = json.loads((spider / "dev.json").read_text(encoding="utf-8"))
    folder = data_dir / "predictions" / "spider-dev"
    systems = [(folder / f"model_{k}.txt").read_text(encoding="utf-8").splitlines() for k in range(1, 6)]
    present = [
        i for i, row in enumerate(dev) if (spider / "database" / row["db_id"] / f"{row['db_id']}.sqlite").is_file()
    ]
    chosen = present[:: max(1, len(present) // prompts)][:prompts]
    trajectories: list[dict[str, Any]] = []
    for p, index in enumerate(chosen):
        row = dev[index]
        for s in range(samples):
            turns = [systems[(s + k) % 5][index] for k in range(1 + (p + s) % 4)]
            trajectories.append({"id": len(trajectories), "db_id": row["db_id"], "question": row["question"],
                                 "gold": row["query"], "turns": turns, "pathological": False})  # fmt: skip
    name = "(a) Spider dev"
    if pathological:
        name = "(b) Spider dev, 2% pathological"
        every = min(PATHOLOGICAL_EVERY, len(trajectories))  # at least one in a smoke run
        for t in trajectories[every // 2 :: every]:
            db_file = spider / "database" / t["db_id"] / f"{t['db_id']}.sqlite"
            t["turns"] = [pathological_query(db_file, t["id"] // PATHOLOGICAL_EVERY)]
            t["pathological"] = True
    return {"name": name, "task": "spider", "preset": "spider", "db_root": str(spider / "database"),
            "trajectories": trajectories}  # fmt: skip


def bird_workload(data_dir: Path, prompts: int, samples: int) -> dict[str, Any]:
    """Workload (c): superhero prompts; turn k of sample s answers with another question's gold, the last
    turn with the prompt's own gold for even s."""
    bird = data_dir / "bird"
    rows = [r for r in json.loads((bird / "dev.json").read_text(encoding="utf-8")) if r["db_id"] == "superhero"]
    chosen = rows[:: max(1, len(rows) // prompts)][:prompts]
    trajectories: list[dict[str, Any]] = []
    for p, row in enumerate(chosen):
        for s in range(samples):
            count = 1 + (p + s) % 4
            turns = [rows[(p * 2 + s + k + 1) % len(rows)]["SQL"] for k in range(count)]
            if s % 2 == 0:
                turns[-1] = row["SQL"]
            trajectories.append({"id": len(trajectories), "db_id": "superhero", "question": row["question"],
                                 "gold": row["SQL"], "turns": turns, "pathological": False})  # fmt: skip
    return {"name": "(c) BIRD superhero", "task": "bird", "preset": "bird", "db_root": str(bird / "dev_databases"),
            "trajectories": trajectories}  # fmt: skip


# ---- runners: one system scoring one workload, inside its own process ----------------------------------


def db_file(workload: dict[str, Any], db_id: str) -> str:
    return str(Path(workload["db_root"]) / db_id / f"{db_id}.sqlite")


def run_progress_sql(workload: dict[str, Any], emit: Emit, *, final_only: bool = False) -> None:
    """Hosted episodes; with ``final_only`` each plays only its trajectory's final answer (T = 1), the
    work the single-turn peers do."""
    from progress_sql.integrations.hosted import HostedEpisode, close_pools, host_settings
    from progress_sql.types import Example

    settings = {n: host_settings({"preset": workload["preset"]}, max_turns=n) for n in range(1, 5)}

    def play(t: dict[str, Any]) -> None:
        example = Example(t["id"], t["question"], t["db_id"], db_file(workload, t["db_id"]), t["gold"])
        turns = t["turns"][-1:] if final_only else t["turns"]
        episode = HostedEpisode(settings[len(turns)], example)
        episode.start()
        reward = 0.0
        for sql in turns:
            step = episode.step(f"<think>scripted</think><sql>{sql}</sql>")
            reward = step.reward
            if step.done:
                break
        emit(t["id"], reward)

    with ThreadPoolExecutor(STEP_THREADS) as threads:
        list(threads.map(play, workload["trajectories"]))
    close_pools()


def run_progress_sql_batched(workload: dict[str, Any], emit: Emit, *, final_only: bool = False) -> None:
    """The same episodes stepped as a trainer that holds the whole step does (TRL's rollout, verl's
    batch reward): the step's golds in one batch (``prepare_golds``), then each turn of the episodes
    still running in one ``step_many``, on the hosted pool. A trajectory's verdict comes when its turn's
    batch ends, so one slow query holds up the verdicts of its batch, not the workers."""
    from progress_sql.env import prepare_golds, step_many
    from progress_sql.integrations.hosted import close_pools, host_settings, hosted_env
    from progress_sql.types import Example

    settings = {n: host_settings({"preset": workload["preset"]}, max_turns=n) for n in range(1, 5)}
    plays = []
    for t in workload["trajectories"]:
        example = Example(t["id"], t["question"], t["db_id"], db_file(workload, t["db_id"]), t["gold"])
        turns = t["turns"][-1:] if final_only else t["turns"]
        plays.append((t["id"], hosted_env(settings[len(turns)]), example, turns))
    prepare_golds([(env, example) for _, env, example, _ in plays])
    for _, env, example, _ in plays:
        env.reset(example)
    active = plays
    for turn in range(max(len(turns) for *_, turns in plays)):
        steps = step_many([(env, f"<think>scripted</think><sql>{turns[turn]}</sql>") for _, env, _, turns in active])
        running = []
        for play, step in zip(active, steps, strict=True):
            if step.terminated or step.truncated:
                emit(play[0], step.reward)
            else:
                running.append(play)
        active = running
    close_pools()


def warm_pool(workload: dict[str, Any]) -> None:
    """Start the hosted pool's workers before the clock, as a trainer's step after its first finds them:
    a trivial query on each (no gold of the workload is prepared)."""
    from progress_sql.execution.executor import ExecLimits
    from progress_sql.execution.jobs import ExecJob
    from progress_sql.integrations.hosted import DEFAULT_EXECUTION_WORKERS, execution_pool

    first = db_file(workload, workload["trajectories"][0]["db_id"])
    jobs = [ExecJob(first, "SELECT 1", ExecLimits())] * (4 * DEFAULT_EXECUTION_WORKERS)
    execution_pool(DEFAULT_EXECUTION_WORKERS).run_many(jobs)


def run_skyrl_gym(workload: dict[str, Any], emit: Emit) -> None:
    from skyrl_gym.envs.sql.env import SQLEnv, Text2SQLEnvConfig

    # skyrl-gym's layout: <root>/spider/database/<db_id>/ or <root>/bird/train/train_databases/<db_id>/
    root = Path(tempfile.mkdtemp(prefix="skyrl_sql_"))
    inside = {"spider": root / "spider" / "database", "bird": root / "bird" / "train" / "train_databases"}
    link = inside[workload["task"]]
    link.parent.mkdir(parents=True)
    link.symlink_to(workload["db_root"])
    config = Text2SQLEnvConfig(db_path=str(root))

    def play(t: dict[str, Any]) -> None:
        extras = {"db_id": t["db_id"], "reward_spec": {"ground_truth": t["gold"]}, "data": workload["task"],
                  "max_turns": len(t["turns"])}  # fmt: skip
        env = SQLEnv(config, extras)
        reward = 0.0
        for k, sql in enumerate(t["turns"]):
            tag = "solution" if k == len(t["turns"]) - 1 else "sql"
            out = env.step(f"<think>scripted</think><{tag}>{sql}</{tag}>")
            reward = float(out["reward"])
            if out["done"]:
                break
        emit(t["id"], reward)

    with ThreadPoolExecutor(STEP_THREADS) as threads:
        list(threads.map(play, workload["trajectories"]))


def vendored_package(name: str, files: Sequence[str]) -> ModuleType:
    """Import bench/peers/<name>/*.py.txt as the package ``name`` (kept as text so that no linter or test
    collector reads the peers' code as ours)."""
    folder = Path(tempfile.mkdtemp(prefix="peers_")) / name
    folder.mkdir()
    for file in files:
        shutil.copy(PEERS / name / f"{file}.py.txt", folder / f"{file}.py")
    (folder / "__init__.py").write_text("", encoding="utf-8")
    sys.path.insert(0, str(folder.parent))
    return __import__(name)


def run_sql_r1(workload: dict[str, Any], emit: Emit) -> None:
    package = vendored_package("sql_r1", ("synsql", "exec_eval", "parse"))
    synsql = __import__(f"{package.__name__}.synsql", fromlist=["compute_score"])
    # Its reward reads data/NL2SQL/SynSQL-2.5M/databases/<db_id>/<db_id>.sqlite under the working directory.
    work = Path(tempfile.mkdtemp(prefix="sql_r1_"))
    (work / "data" / "NL2SQL" / "SynSQL-2.5M").mkdir(parents=True)
    (work / "data" / "NL2SQL" / "SynSQL-2.5M" / "databases").symlink_to(workload["db_root"])
    os.chdir(work)
    for t in workload["trajectories"]:
        text = f"<|im_start|>assistant\n<think>scripted</think>\n<answer>```sql\n{t['turns'][-1]}\n```</answer>"
        emit(t["id"], float(synsql.compute_score(text, {"db_id": t["db_id"], "sql": t["gold"]})))


def run_pool_evaluator(module: ModuleType, workload: dict[str, Any], emit: Emit) -> None:
    """Arctic-Text2SQL-R1's / OmniSQL's ``evaluate_sqls_parallel`` on the final answers; a verdict is
    seen when its own callback appends it to the module's ``evaluation_results``."""
    trajectories = workload["trajectories"]

    class Seen(list[dict[str, Any]]):
        def append(self, item: dict[str, Any]) -> None:
            super().append(item)
            emit(trajectories[item["question_id"]]["id"], float(item["correctness"]))

    setattr(module, "evaluation_results", Seen())  # noqa: B010  # the module global its callback appends to
    module.evaluate_sqls_parallel(
        [db_file(workload, t["db_id"]) for t in trajectories],
        [t["question"] for t in trajectories],
        [t["turns"][-1] for t in trajectories],
        [t["gold"] for t in trajectories],
        num_cpus=EVAL_PROCESSES,
        timeout=EVAL_TIMEOUT_S,
    )


def run_arctic(workload: dict[str, Any], emit: Emit) -> None:
    package = vendored_package("arctic_text2sql_r1", ("evaluate_bird",))
    run_pool_evaluator(__import__(f"{package.__name__}.evaluate_bird", fromlist=["x"]), workload, emit)


def run_omnisql(workload: dict[str, Any], emit: Emit) -> None:
    source = Path(os.environ["PEERS_OMNISQL"]) / "train_and_evaluate" / "evaluate_bird.py"
    try:
        import tqdm  # noqa: F401
    except ImportError:  # only its progress bars use tqdm, never the evaluation functions run here
        stand_in = ModuleType("tqdm")
        stand_in.tqdm = lambda iterable=None, **_: iterable  # type: ignore[attr-defined]
        sys.modules["tqdm"] = stand_in
    spec = importlib.util.spec_from_file_location("omnisql_evaluate_bird", source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the pool's workers find its functions by module name (fork)
    spec.loader.exec_module(module)
    run_pool_evaluator(module, workload, emit)


@dataclass(frozen=True, slots=True)
class System:
    """A peer (or us): how its process is started and what it is given."""

    name: str
    scored: str  # what of a trajectory it scores
    runner: Callable[[dict[str, Any], Emit], None] | None  # None: an external runner (nemo-gym)
    needs: tuple[str, ...] = ()  # modules its code imports beyond the project's core
    installs: tuple[str, ...] = ()  # what provides them
    warm: Callable[[dict[str, Any]], None] | None = None  # run before the clock starts


SYSTEMS = {
    s.name: s
    for s in (
        System(
            "progress-sql",
            "every turn until a match (T <= 4), ODT feedback, progressive reward",
            run_progress_sql,
            warm=warm_pool,
        ),
        System(
            "progress-sql-final",
            "final answer only (T = 1: the single-turn peers' work, with the ODT diagnosis and reward)",
            functools.partial(run_progress_sql, final_only=True),
            warm=warm_pool,
        ),
        System(
            "progress-sql-batched",
            "every turn until a match (T <= 4), each turn of the step's episodes in one batch (step_many)",
            run_progress_sql_batched,
            warm=warm_pool,
        ),
        System(
            "progress-sql-batched-final",
            "final answer only (T = 1), the step's answers in one batch (step_many)",
            functools.partial(run_progress_sql_batched, final_only=True),
            warm=warm_pool,
        ),
        System(
            "skyrl-gym",
            "turns 1..n-1 as <sql> probes (run, not scored), turn n as <solution>",
            run_skyrl_gym,
            ("skyrl_gym",),
            ("-e '.[skyrl]'",),
        ),
        System(
            "sql-r1",
            "final answer only (single-turn reward)",
            run_sql_r1,
            ("func_timeout", "sqlparse"),
            ("func_timeout==4.3.5", "sqlparse"),
        ),
        System("nemo-gym", "final answer only (single-turn verify)", None),
        System(
            "arctic-text2sql-r1",
            "final answer only (evaluation script)",
            run_arctic,
            ("func_timeout",),
            ("func_timeout==4.3.5",),
        ),
        System(
            "omnisql", "final answer only (evaluation script)", run_omnisql, ("func_timeout",), ("func_timeout==4.3.5",)
        ),
    )
}


def runner_main(name: str, workload_file: str, results_file: str) -> int:
    """The child's side: score the workload, one JSON line per verdict (``done_s`` from the step's start)."""
    workload = json.loads(Path(workload_file).read_text(encoding="utf-8"))
    system = SYSTEMS[name]
    if system.warm is not None:
        system.warm(workload)
    out = open(results_file, "a", encoding="utf-8")  # noqa: SIM115  # closed below or by os._exit
    lock = threading.Lock()
    out.write(json.dumps({"start": True}) + "\n")  # the driver's CPU clock starts here, after the imports
    out.flush()
    began = time.perf_counter()

    def emit(trajectory_id: int, reward: float) -> None:
        record = {"id": trajectory_id, "done_s": time.perf_counter() - began, "reward": reward}
        with lock:
            out.write(json.dumps(record) + "\n")
            out.flush()

    assert system.runner is not None
    system.runner(workload, emit)
    out.close()
    os._exit(0)  # threads of queries a timeout gave up on may still run: the verdicts are in


# ---- the driver: start, watch and cap each system's process --------------------------------------------


@dataclass(slots=True)
class Watch:
    peak_rss: int = 0
    cpu_by_pid: dict[int, float] = field(default_factory=dict)

    def sample(self, root: psutil.Process) -> None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        rss = 0
        for process in tree:
            try:
                times = process.cpu_times()
                rss += process.memory_info().rss
                self.cpu_by_pid[process.pid] = times.user + times.system
            except psutil.Error:
                continue
        self.peak_rss = max(self.peak_rss, rss)

    @property
    def cpu(self) -> float:
        return sum(self.cpu_by_pid.values())


@dataclass(slots=True)
class Outcome:
    system: str
    workload: str
    verdicts: dict[int, tuple[float, float]]  # id -> (seconds from the step's start, reward)
    ended: bool
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    db_unchanged: bool
    note: str = ""


def digests(files: Sequence[str]) -> dict[str, str]:
    return {f: hashlib.sha256(Path(f).read_bytes()).hexdigest() for f in files}


def nemo_gym_python() -> Path:
    """The nemo_gym side environment's interpreter (scripts/side_venv.sh's cache key)."""
    key = hashlib.sha256((ROOT / "constraints-nemo_gym.txt").read_bytes()).hexdigest()[:16]
    cache = Path(os.environ.get("PROGRESS_SQL_CACHE", Path.home() / ".cache" / "progress-sql"))
    return cache / f"nemo_gym-venv-{key}" / "bin" / "python"


def command_for(system: System, workload_file: Path, results: Path, omnisql: Path | None) -> list[str] | str:
    """The child's command line, or why the system cannot run here."""
    if system.name == "nemo-gym":
        python = nemo_gym_python()
        if not python.is_file():
            return f"not run: no nemo_gym side environment at {python.parent.parent} (scripts/side_venv.sh nemo_gym)"
        return [str(python), str(PEERS / "nemo_gym_runner.py"), str(workload_file), str(results)]
    if system.name == "omnisql" and (omnisql is None or not (omnisql / "train_and_evaluate").is_dir()):
        return "not run: give --omnisql PATH, a checkout of RUCKBReasoning/OmniSQL (no licence file: not vendored)"
    missing = [m for m in system.needs if importlib.util.find_spec(m) is None]
    if missing:
        return f"not run: needs {', '.join(missing)} in this environment (pip install {' '.join(system.installs)})"
    return [sys.executable, str(Path(__file__).resolve()), "--runner", system.name, str(workload_file), str(results)]


def run_system(
    system: System, workload: dict[str, Any], cap_s: float, omnisql: Path | None, src: Path, work: Path
) -> Outcome:
    workload_file = work / "workload.json"
    workload_file.write_text(json.dumps(workload), encoding="utf-8")
    results = work / f"{system.name}.jsonl"
    results.unlink(missing_ok=True)
    files = sorted({db_file(workload, t["db_id"]) for t in workload["trajectories"]})
    before = digests(files)
    command = command_for(system, workload_file, results, omnisql)
    if isinstance(command, str):
        return Outcome(system.name, workload["name"], {}, False, 0.0, 0.0, 0.0, True, command)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT / "bench")])}
    if omnisql is not None:
        env["PEERS_OMNISQL"] = str(omnisql)
    errors = work / f"{system.name}.stderr"  # a file, not a pipe: a chatty child must never block on it
    with errors.open("wb") as stderr:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr, cwd=work)
    root, watch = psutil.Process(process.pid), Watch()
    expected = len(workload["trajectories"])
    started, cpu_at_start, count = time.perf_counter(), 0.0, 0
    while process.poll() is None:
        watch.sample(root)
        count = sum(1 for _ in results.open(encoding="utf-8")) if results.exists() else 0
        if count and not cpu_at_start:
            cpu_at_start = watch.cpu  # the runner's start line: setup (imports, servers) is behind us
        if time.perf_counter() - started > cap_s:
            break
        time.sleep(0.05)
    ended = process.poll() is not None and process.returncode == 0
    error = ""
    if process.poll() is None:
        for child in [*root.children(recursive=True), root]:
            child.kill()
        process.wait()
    elif process.returncode != 0:
        said = errors.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        error = said[-1] if said else f"exit {process.returncode}"
    verdicts = {}
    for line in results.read_text(encoding="utf-8").splitlines() if results.exists() else []:
        record = json.loads(line)
        if "id" not in record:
            continue
        verdicts[int(record["id"])] = (float(record["done_s"]), float(record["reward"]))
    wall = max((d for d, _ in verdicts.values()), default=0.0) if ended else cap_s
    note = f"failed: {error}" if error else ""
    if not ended and not error:
        note = f"did not end in {cap_s:g} s ({len(verdicts)}/{expected} scored)"
    cpu = max(0.0, watch.cpu - cpu_at_start)
    complete = ended and len(verdicts) == expected
    return Outcome(system.name, workload["name"], verdicts, complete, wall, cpu, watch.peak_rss / 2**20,
                   digests(files) == before, note)  # fmt: skip


# ---- the table ------------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def normal_ids(workload: dict[str, Any]) -> set[int]:
    return {t["id"] for t in workload["trajectories"] if not t["pathological"]}


def row(outcome: Outcome, baseline: Outcome | None, normal: set[int]) -> list[str]:
    if not outcome.verdicts:
        return [outcome.system, outcome.workload, *["-"] * 8, "yes" if outcome.db_unchanged else "**no**", outcome.note]
    times = [d for d, _ in outcome.verdicts.values()]
    rate = len(times) / outcome.wall_s if outcome.wall_s else 0.0
    cores = outcome.cpu_s / outcome.wall_s if outcome.wall_s else 0.0
    per_core = len(times) / outcome.cpu_s if outcome.cpu_s else 0.0
    stall = "-"
    if baseline is not None and baseline.verdicts:
        mine = [outcome.verdicts[i][0] for i in normal if i in outcome.verdicts]
        theirs = [baseline.verdicts[i][0] for i in normal if i in baseline.verdicts]
        changed = sum(1 for i in normal if i in outcome.verdicts and i in baseline.verdicts
                      and outcome.verdicts[i][1] != baseline.verdicts[i][1])  # fmt: skip
        if mine and theirs:
            p99 = f"p99 {percentile(mine, 0.99):.1f} s vs {percentile(theirs, 0.99):.1f} s"
            stall = f"{p99}; {changed} verdicts changed"
    return [
        outcome.system, outcome.workload, f"{len(times)}", f"{outcome.wall_s:.1f}", f"{rate:.1f}", f"{cores:.2f}",
        f"{per_core:.1f}", f"{statistics.median(times):.2f} / {percentile(times, 0.99):.2f}", stall,
        f"{outcome.peak_rss_mb:.0f}", "yes" if outcome.db_unchanged else "**no**", outcome.note,
    ]  # fmt: skip


COLUMNS = ("system", "workload", "verdicts", "step s", "traj/s", "cores used", "traj per core-s",
           "latency p50 / p99 s", "normal trajectories vs (a)", "peak RSS MB", "DB unchanged", "note")  # fmt: skip


def workloads_for(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    prompts, samples = (4, 2) if args.quick else (args.prompts, args.samples)
    for key in args.workloads.split(","):
        if key == "a":
            yield spider_workload(args.data_dir, prompts, samples, pathological=False)
        elif key == "b":
            yield spider_workload(args.data_dir, prompts, samples, pathological=True)
        elif key == "c":
            yield bird_workload(args.data_dir, prompts, samples)
        else:
            raise SystemExit(f"error: unknown workload {key!r} (a, b or c)")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["--runner"]:
        return runner_main(*arguments[1:4])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 4 prompts x 2 samples")
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--samples", type=int, default=8, help="samples per prompt (GRPO's G)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, of: " + ", ".join(SYSTEMS))
    parser.add_argument("--workloads", default="a,b,c")
    parser.add_argument("--cap", type=float, default=120.0, help="seconds a system may take on one workload")
    parser.add_argument("--omnisql", type=Path, default=None, help="a checkout of RUCKBReasoning/OmniSQL")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the progress_sql under test (its src folder)")
    add_output_options(parser)
    args = parser.parse_args(arguments)
    if spider_dev_missing(args.data_dir):
        return 1
    unknown = [s for s in args.systems.split(",") if s not in SYSTEMS]
    if unknown:
        print(f"error: unknown system(s) {', '.join(unknown)} (known: {', '.join(SYSTEMS)})", file=sys.stderr)
        return 2
    info = machine()
    rows, outcomes_a = [], {}
    with tempfile.TemporaryDirectory(prefix="peers_") as work:
        for workload in workloads_for(args):
            normal = normal_ids(workload)
            for name in args.systems.split(","):
                outcome = run_system(SYSTEMS[name], workload, args.cap, args.omnisql, args.src, Path(work))
                if workload["name"].startswith("(a)"):
                    outcomes_a[name] = outcome
                baseline = outcomes_a.get(name) if workload["name"].startswith("(b)") else None
                rows.append(row(outcome, baseline, normal))
                print(" | ".join(rows[-1]), flush=True)
    if not args.no_doc:
        command = command_line("bench/peers.py", argv)
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        lines = [
            SECTION,
            "",
            "The same GRPO-step workloads through our hosted environment and through each peer's own code",
            "(bench/peers/README.md: repositories, commits, licences, what of each runs). A trajectory's latency",
            "runs from the step's start (all trajectories submitted at once) to its verdict; `cores used` is the",
            "process tree's CPU seconds over the step's wall time (imports and setup excluded), so `traj per",
            "core-s` is trajectories per CPU second; `normal trajectories vs (a)` compares, in (b), the",
            "trajectories that are not pathological with the same trajectories in (a): the p99 of their",
            "latency and how many got another verdict. Peak RSS is the process tree's (pool workers included).",
            "Our hosted pool's 32 workers are started before the clock (a trainer's later steps find them",
            "running); the peers' pools and threads are made inside the step, as their code makes them.",
            "",
            *provenance(command, info),
            f"Commit: {head.stdout.strip() or 'unknown'}; progress_sql under test: `{args.src}`",
            "",
            "| " + " | ".join(COLUMNS) + " |",
            "|---|---|" + "---:|" * 8 + "---|---|",
            *(f"| {' | '.join(r)} |" for r in rows),
            "",
            "What each system scores of a trajectory: "
            + "; ".join(f"{s.name}: {s.scored}" for s in SYSTEMS.values() if s.name in args.systems.split(","))
            + ".",
            "",
        ]
        write_section(args.doc, SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
