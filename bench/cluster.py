"""Scale-out on Ray over the synthetic dataset: throughput with 1 and 2 simulated nodes, and the
per-example costs behind docs/scaling.md's SynSQL-2.5M projection.

* **dataset**: ``progress_sql.cluster.synthetic`` (``--databases`` x ``--questions``, seed 0);
* **baseline** (same run, no Ray, one process, one run each): the audit (every check), the evaluation of
  the dataset's predictions (one execution worker) and the suite build (``--pool``/``--max-dbs``, on the
  first ``--suite-databases`` databases): seconds per example (per database for suites) on one core;
* **Ray**: a local cluster (Ray's ``cluster_utils.Cluster``: a head that runs nothing, worker nodes of
  one CPU each), the same three runs through ``RayCluster`` with 1 node, then with 2; examples (or
  databases) per second, the median of ``--repeat`` runs, and the speed-up 2 nodes / 1 node. Every Ray
  run's records are checked equal to the baseline's. The SynSQL-2.5M projection takes its per-item
  costs from the 1-node medians.

    .venv/bin/python bench/cluster.py [--databases 500] [--questions 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import add_output_options, command_line, machine, provenance, write_section
from progress_sql.audit.runner import audit_examples
from progress_sql.cluster.synthetic import SyntheticConfig, generate_dataset
from progress_sql.data.tasks import load_task
from progress_sql.evaluation.harness import Sample, evaluate
from progress_sql.evaluation.run import ShardedEval, evaluate_on_cluster
from progress_sql.execution.executor import ExecLimits
from progress_sql.execution.pool import ExecutionPool
from progress_sql.judge.cache import GoldCache
from progress_sql.judge.compare import get_preset
from progress_sql.judge.gold import GoldStore
from progress_sql.testsuite.build import build_suites, schema_jobs
from progress_sql.testsuite.distill import SuiteConfig

SECTION = "## Scale-out on Ray (synthetic dataset, simulated nodes)"
#: SynSQL-2.5M's size as the issue states it: about 2.5 million questions over about 16,000 databases.
SYNSQL_EXAMPLES = 2_500_000
SYNSQL_DATABASES = 16_000
#: The cluster the projection is for.
PROJECTED_NODES = 8
PROJECTED_CPUS_PER_NODE = 32
NODE = {"num_cpus": 1, "object_store_memory": 80 * 2**20}


def _timed(run: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = run()
    return time.perf_counter() - start, value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--databases", type=int, default=500)
    parser.add_argument("--questions", type=int, default=4, help="questions per database")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pool", type=int, default=24, help="build-suite --pool")
    parser.add_argument("--max-dbs", type=int, default=10, help="build-suite --max-dbs")
    parser.add_argument("--suite-databases", type=int, default=40, help="databases the suite runs build")
    add_output_options(parser)
    args = parser.parse_args(argv)
    try:
        import ray
        from ray.cluster_utils import Cluster

        from progress_sql.cluster.ray_runner import ClusterOptions, RayCluster
    except ImportError:
        print("error: this benchmark needs the [ray] extra", file=sys.stderr)
        return 1
    info = machine()
    with tempfile.TemporaryDirectory() as work:
        dataset = generate_dataset(Path(work) / "syn", SyntheticConfig(args.databases, args.questions))
        examples = load_task(str(dataset.questions), None)
        answers = [[Sample(line)] for line in dataset.predictions.read_text(encoding="utf-8").splitlines()]
        preset = get_preset("spider")
        limits = ExecLimits(timeout_s=30.0)
        jobs = schema_jobs(examples)[0][: args.suite_databases]
        suite_config = SuiteConfig(pool=args.pool, max_dbs=args.max_dbs)

        def local_eval() -> list[Any]:
            with ExecutionPool(1) as pool:
                return evaluate(examples, answers, GoldStore(preset, pool=pool, limits=limits, cache=GoldCache()))

        baseline: dict[str, tuple[float, Any]] = {
            "audit": _timed(lambda: audit_examples(examples, workers=1)),
            "eval": _timed(local_eval),
            "build-suite": _timed(lambda: build_suites(jobs, Path(work) / "suite0", suite_config, workers=1)),
        }
        counts = {"audit": len(examples), "eval": len(examples), "build-suite": len(jobs)}
        for name, (seconds, _) in baseline.items():
            print(f"baseline {name}: {seconds:.1f} s, {1000 * seconds / counts[name]:.1f} ms per item", flush=True)

        cluster = Cluster(initialize_head=True, head_node_args={**NODE, "num_cpus": 0, "include_dashboard": False})
        throughput: dict[tuple[str, int], float] = {}
        try:
            for nodes in (1, 2):
                cluster.add_node(**NODE)
                cluster.wait_for_nodes()
                with RayCluster(ClusterOptions(cluster.address)) as on_ray:
                    runs: dict[str, Callable[[], Any]] = {
                        "audit": lambda: audit_examples(examples, workers=1, cluster=on_ray),
                        "eval": lambda: evaluate_on_cluster(examples, answers, ShardedEval(preset, limits), on_ray)[0],
                        "build-suite": lambda: build_suites(
                            jobs,
                            Path(work) / f"suite{nodes}",  # noqa: B023
                            suite_config,
                            cluster=on_ray,
                        ),
                    }
                    for name, run in runs.items():
                        times = []
                        for _ in range(args.repeat):
                            seconds, records = _timed(run)
                            if records != baseline[name][1]:
                                print(f"error: {name} on {nodes} node(s) differs from the baseline", file=sys.stderr)
                                return 1
                            times.append(seconds)
                        throughput[(name, nodes)] = counts[name] / statistics.median(times)
                        print(f"{name}, {nodes} node(s): {throughput[(name, nodes)]:.1f} per s", flush=True)
        finally:
            if ray.is_initialized():
                ray.shutdown()
            cluster.shutdown()

    lines = [SECTION, "", *provenance(command_line("bench/cluster.py", argv), info), ""]
    lines += [
        f"Dataset: {dataset.examples} questions over {dataset.database_count} generated databases "
        f"(`python -m progress_sql.cluster.synthetic`, seed 0); suites: the first {len(jobs)} databases, "
        f"--pool {args.pool} --max-dbs {args.max_dbs}. Ray nodes: `ray.cluster_utils.Cluster`, a head that "
        f"runs nothing and worker nodes of 1 CPU each, on this 2-core machine; medians of {args.repeat} runs; "
        "every Ray run's records equal the baseline's.",
        "",
        "| work | baseline, 1 process (no Ray) | per item, 1 core | Ray, 1 node | Ray, 2 nodes | 2 nodes / 1 node |",
        "|---|---|---|---|---|---|",
    ]
    unit = {"audit": "examples", "eval": "examples", "build-suite": "databases"}
    for name, (seconds, _) in baseline.items():
        one, two = throughput[(name, 1)], throughput[(name, 2)]
        lines.append(
            f"| {name} | {counts[name] / seconds:.1f} {unit[name]}/s | {1000 * seconds / counts[name]:.1f} ms | "
            f"{one:.1f}/s | {two:.1f}/s | {two / one:.2f}x |"
        )
    cpus = PROJECTED_NODES * PROJECTED_CPUS_PER_NODE
    lines += [
        "",
        f"SynSQL-2.5M projection ({SYNSQL_EXAMPLES:,} questions, {SYNSQL_DATABASES:,} databases) from the "
        "per-item cost on one Ray node of 1 CPU (the median above, Ray's overhead included), on one 2-core "
        f"machine and on {PROJECTED_NODES} nodes x {PROJECTED_CPUS_PER_NODE} CPUs = {cpus} CPUs at the measured "
        "2-node efficiency (speed-up / 2, at most 1):",
        "",
        "| work | per item, 1 CPU | items | one 2-core machine | cluster |",
        "|---|---|---|---|---|",
    ]
    for name in baseline:
        per_item = 1 / throughput[(name, 1)]
        items = SYNSQL_DATABASES if name == "build-suite" else SYNSQL_EXAMPLES
        efficiency = min(1.0, throughput[(name, 2)] / throughput[(name, 1)] / 2)
        lines.append(
            f"| {name} | {1000 * per_item:.1f} ms | {items:,} | {items * per_item / 2 / 3600:.1f} h | "
            f"{items * per_item / (cpus * efficiency) / 60:.1f} min |"
        )
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_doc:
        write_section(args.doc, SECTION, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
