"""``--ray`` on a local Ray cluster of simulated nodes (Ray's own ``cluster_utils.Cluster``): audit, eval
and build-suite over 500 generated databases give, record for record, the one-machine run's records
(byte-identical samples.jsonl; the suites' manifest and files too); a node killed mid-run loses no record
and duplicates none; databases shipped through the object store change nothing either."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.audit.runner import _audit_shard, audit_examples
from progress_sql.cli import app
from progress_sql.cluster.shards import example_db_path
from progress_sql.cluster.synthetic import SyntheticConfig, SyntheticDataset, generate_dataset
from progress_sql.data.tasks import load_task
from progress_sql.errors import DatasetError

ray = pytest.importorskip("ray", reason="the cluster tests need the [ray] extra (scripts/test.sh installs it)")
from ray.cluster_utils import Cluster  # noqa: E402

runner = CliRunner()
DATABASES = 500
#: Small object stores: the simulated nodes share this machine's memory.
NODE = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
#: How long a shard on the node to be killed waits for its end.
STALL_S = 300.0


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> SyntheticDataset:
    return generate_dataset(
        tmp_path_factory.mktemp("synthetic"), SyntheticConfig(databases=DATABASES, questions_per_database=1)
    )


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A head that runs nothing and two worker nodes of one CPU each."""
    made = Cluster(initialize_head=True, head_node_args={**NODE, "num_cpus": 0, "include_dashboard": False})
    for _ in range(2):
        made.add_node(**NODE)
    made.wait_for_nodes()
    yield made
    made.shutdown()


def _kill_node(cluster: Cluster, node: Any) -> None:
    """Kill a simulated node as a machine failure does: its worker processes (which would otherwise
    finish their task and report it straight to the driver) and then its raylet and stores."""
    from ray._private import ray_constants

    raylet = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[1]) == raylet:  # a child of the node's raylet: one of its worker processes
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(stat.parent.name), signal.SIGKILL)
    cluster.remove_node(node, allow_graceful=False)


def _cli(argv: list[str]) -> None:
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output[-3000:]


def _sorted_records(path: Path) -> list[str]:
    """samples.jsonl's lines sorted by the record's index (the records themselves untouched)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return sorted(lines, key=lambda line: json.loads(line)["index"])


def _on_both(argv: list[str], out: Path, cluster: Cluster, *extra: str) -> tuple[Path, Path]:
    """Run ``argv`` on this machine (two worker processes) and on the cluster; the two run folders."""
    here, there = out / "here", out / "ray"
    _cli([*argv, "--out", str(here), "--workers", "2"])
    _cli([*argv, "--out", str(there), "--ray", cluster.address, *extra])
    return here, there


def test_audit_on_two_nodes_gives_the_same_records(dataset: SyntheticDataset, cluster: Cluster, tmp_path: Path) -> None:
    here, there = _on_both(["audit", "--task", str(dataset.questions), "--json"], tmp_path, cluster)
    local = _sorted_records(here / "samples.jsonl")
    assert len(local) == DATABASES
    assert local == _sorted_records(there / "samples.jsonl")
    assert (here / "records.jsonl").read_bytes() == (there / "records.jsonl").read_bytes()
    summary = json.loads((there / "summary.json").read_text())
    assert summary["settings"]["ray"] == cluster.address
    assert summary["checks"] == json.loads((here / "summary.json").read_text())["checks"]
    assert summary["checks"]["G03"]["fired"] > 0  # the filters have something to find


def test_eval_of_predictions_on_two_nodes_gives_the_same_records(
    dataset: SyntheticDataset, cluster: Cluster, tmp_path: Path
) -> None:
    argv = ["eval", "--task", str(dataset.questions), "--predictions", str(dataset.predictions), "--no-plots", "--json"]
    here, there = _on_both(argv, tmp_path, cluster)
    local = _sorted_records(here / "samples.jsonl")
    assert len(local) == DATABASES
    assert local == _sorted_records(there / "samples.jsonl")
    metrics = [json.loads((folder / "summary.json").read_text())["metrics"] for folder in (here, there)]
    assert metrics[0] == metrics[1]
    assert 0 < metrics[0]["execution_accuracy"] < 1  # right and wrong answers both there


def test_eval_under_the_paper_profile_diagnoses_with_its_odt_on_every_node(
    dataset: SyntheticDataset, cluster: Cluster, tmp_path: Path
) -> None:
    """``eval --profile paper --ray``: each shard's store gets the profile's ODT, as one machine's does.
    The first prediction misspells a column: the paper's syntax-only verdict diagnoses its structure
    where ours stops at SQLite's compile error, so the two profiles' records differ there."""
    examples = load_task(str(dataset.questions), None)
    predictions = dataset.predictions.read_text(encoding="utf-8").splitlines()
    gold = examples[0].gold_sql
    misspelled = gold.replace("SELECT ", "SELECT nosuchcolumn, ", 1)
    assert misspelled != gold
    edited = tmp_path / "predictions.sql"
    edited.write_text("\n".join([misspelled, *predictions[1:]]) + "\n", encoding="utf-8")
    argv = ["eval", "--task", str(dataset.questions), "--predictions", str(edited), "--no-plots", "--json"]
    here, there = _on_both([*argv, "--profile", "paper"], tmp_path / "paper", cluster)
    assert _sorted_records(here / "samples.jsonl") == _sorted_records(there / "samples.jsonl")
    default = tmp_path / "default"
    _cli([*argv, "--out", str(default), "--workers", "2"])
    first = {name: json.loads(_sorted_records(folder / "samples.jsonl")[0]) for name, folder in
             (("paper", there), ("default", default))}  # fmt: skip
    assert first["paper"] != first["default"]


def test_eval_of_a_model_run_on_two_nodes_gives_the_same_records(
    dataset: SyntheticDataset, cluster: Cluster, tmp_path: Path
) -> None:
    """Generation on this machine (a replay backend), judging on the cluster: the same records."""
    examples = load_task(str(dataset.questions), None)[:120]
    predictions = dataset.predictions.read_text(encoding="utf-8").splitlines()
    script: dict[str, list[str]] = {}
    for example, sql in zip(examples, predictions, strict=False):
        script.setdefault(example.question, []).append(f"```sql\n{sql}\n```")
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps({"key": k, "responses": v}) + "\n" for k, v in script.items()))
    argv = ["eval", "--task", str(dataset.questions), "--backend", "replay", "--replay", str(replay), "--limit",
            "120", "--no-plots", "--json"]  # fmt: skip
    here, there = _on_both(argv, tmp_path, cluster)
    assert _sorted_records(here / "samples.jsonl") == _sorted_records(there / "samples.jsonl")


def test_build_suite_on_two_nodes_gives_the_same_suites(
    dataset: SyntheticDataset, cluster: Cluster, tmp_path: Path
) -> None:
    argv = ["build-suite", "--task", str(dataset.questions), "--pool", "1", "--max-dbs", "2", "--json"]
    here, there = _on_both(argv, tmp_path, cluster)
    local = (here / "samples.jsonl").read_text().splitlines()
    assert len(local) == DATABASES  # one record per gold
    assert local == (there / "samples.jsonl").read_text().splitlines()
    assert (here / "manifest.json").read_bytes() == (there / "manifest.json").read_bytes()
    files = sorted(p.relative_to(here) for p in here.rglob("*.sqlite"))
    assert files
    assert files == sorted(p.relative_to(there) for p in there.rglob("*.sqlite"))
    assert all((here / f).read_bytes() == (there / f).read_bytes() for f in files)
    # and test-suite accuracy judged on the cluster (the suite folder read where the driver reads it)
    argv = ["eval", "--task", str(dataset.questions), "--predictions", str(dataset.predictions), "--suite",
            str(here), "--limit", "200", "--no-plots", "--json"]  # fmt: skip
    judged_here, judged_there = _on_both(argv, tmp_path / "ts", cluster)
    records = _sorted_records(judged_here / "samples.jsonl")
    assert any(json.loads(line)["ts_match"] is not None for line in records)
    assert records == _sorted_records(judged_there / "samples.jsonl")


def test_databases_shipped_through_the_object_store_give_the_same_results(
    dataset: SyntheticDataset, cluster: Cluster, tmp_path: Path
) -> None:
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps(json.loads(dataset.questions.read_text())[:80]))
    (tmp_path / "database").symlink_to(dataset.databases)
    for argv in (
        ["audit", "--task", str(subset), "--json"],
        ["build-suite", "--task", str(subset), "--pool", "1", "--max-dbs", "2", "--json"],
    ):
        here, there = _on_both(argv, tmp_path / argv[0], cluster, "--ray-databases", "object-store")
        assert (here / "samples.jsonl").read_bytes() == (there / "samples.jsonl").read_bytes()
    suites = tmp_path / "build-suite"
    assert (suites / "here" / "manifest.json").read_bytes() == (suites / "ray" / "manifest.json").read_bytes()


def _environment_of_each(items: list[str]) -> list[str | None]:
    import os

    return [os.environ.get("PROGRESS_SQL_SQLITE_IMMUTABLE") for _ in items]


def _refuse(items: list[str]) -> list[str]:
    raise DatasetError(f"bad shard of {len(items)}")


def test_shards_see_the_drivers_sqlite_mode_and_their_own_errors_end_the_run(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from progress_sql.cluster.ray_runner import ClusterOptions, RayCluster

    monkeypatch.setenv("PROGRESS_SQL_SQLITE_IMMUTABLE", "1")
    items = [f"db{k % 7}" for k in range(30)]
    with RayCluster(ClusterOptions(cluster.address, shard_items=5)) as on_ray:
        run = on_ray.map(_environment_of_each, items, db_path=str)
        assert run.results == ("1",) * 30
        assert run.shards == 7  # one per database
        with pytest.raises(DatasetError, match="bad shard"):  # the shard's own error, not retried
            on_ray.map(_refuse, items, db_path=str)


def _stall_on(node_id: str, started: str, fn: Callable[[list[Any]], Any], items: list[Any]) -> Any:
    """A shard function that, on the node ``node_id``, says it has started (a file: the simulated nodes
    share this machine) and then waits to be killed with its node; elsewhere it is ``fn``."""
    import ray as ray_on_node

    if str(ray_on_node.get_runtime_context().get_node_id()) == node_id:
        Path(started).touch()
        time.sleep(STALL_S)  # the test kills this node long before; if it did not, no shard is retried
    return fn(items)


def test_a_node_killed_mid_run_loses_no_record_and_duplicates_none(
    dataset: SyntheticDataset, cluster: Cluster, tmp_path: Path
) -> None:
    from progress_sql.cluster.ray_runner import ClusterOptions, RayCluster

    checks = ("G01", "G03", "G06")
    examples = load_task(str(dataset.questions), None)
    expected = [r.as_dict() for r in audit_examples(examples, checks, workers=2)]
    victim = next(iter(cluster.worker_nodes))
    started = tmp_path / "victim-started"
    killed, finished = threading.Event(), threading.Event()
    done: list[int] = []

    def kill_once_the_victim_runs_a_shard() -> None:
        while not started.exists() and not finished.is_set():
            time.sleep(0.05)
        if started.exists():  # the victim holds a shard now: it is lost with the node and must run again
            _kill_node(cluster, victim)
            killed.set()

    killer = threading.Thread(target=kill_once_the_victim_runs_a_shard, daemon=True)
    killer.start()
    shard = partial(_stall_on, victim.node_id, str(started), partial(_audit_shard, checks, 1, 5.0))
    with RayCluster(ClusterOptions(cluster.address, shard_items=25)) as on_ray:
        try:
            run = on_ray.map(shard, examples, db_path=example_db_path, progress=done.append)
        finally:
            finished.set()
    killer.join()
    seen = [r.as_dict() for r in run.results]
    assert killed.is_set()
    assert run.retried >= 1  # the victim's shard ran again on the other node
    assert [r["index"] for r in seen] == list(range(len(examples)))  # each record once, in order
    assert seen == expected
    assert sum(done) == len(examples)  # progress counted each record once
    cluster.add_node(**NODE)  # leave the cluster as the other tests found it
