"""`progress-sql export`: each format's file, its manifest, mixtures, unverified rows, bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from progress_sql.env.core import EnvConfig, SQLRefineEnv, make_store
from progress_sql.execution.pool import ExecutionPool
from progress_sql.export.build import export_items
from progress_sql.types import Example
from tests.conftest import build_database

pq = pytest.importorskip("pyarrow.parquet", reason="parquet export needs the [export] extra")
runner = CliRunner()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Spider layout with the music database, plus one question on a database that is absent."""
    folder = tmp_path_factory.mktemp("export_data")
    build_database("music.sql", folder / "database")
    questions = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "music_questions.json").read_text())
    questions.append({"db_id": "absent", "question": "How many rows?", "query": "SELECT count(*) FROM t"})
    (folder / "questions.json").write_text(json.dumps(questions))
    return folder


def export(*args: str) -> Any:
    return runner.invoke(app, ["export", *args])


def test_verl_file_and_manifest(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "verl" / "train.parquet"
    result = export("--format", "verl", "--task", str(data / "questions.json"), "--data-dir", str(data),
                    "--out", str(out), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 7
    first = rows[0]
    assert set(first) == {"data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"}
    assert first["agent_name"] == "progress_sql_agent"
    assert first["reward_model"] == {"style": "rule", "ground_truth": "SELECT count(*) FROM singer"}
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    info = first["extra_info"]
    assert (info["index"], info["source_index"], info["db_id"], info["verified"]) == (0, 0, "music", True)
    assert Path(info["db_path"]).is_absolute()
    assert Path(info["db_path"]).is_file()
    assert info["question"] in first["prompt"][1]["content"]
    absent = rows[-1]
    assert absent["extra_info"]["verified"] is False
    assert "Database Schema" not in absent["prompt"][1]["content"]  # nothing to read: the question alone
    manifest = json.loads((tmp_path / "verl" / "train.manifest.json").read_text())
    assert manifest == json.loads(result.stdout)
    assert manifest["rows"] == 7
    assert manifest["per_source"] == {"questions": 7}
    assert manifest["unverified"] == {"questions": 1}
    assert {r["data_source"] for r in rows} == {"questions"}
    assert (manifest["format"], manifest["filter"], manifest["dropped"], manifest["dropped_file"]) == (
        "verl", "rl-default", 0, None
    )  # fmt: skip
    assert manifest["versions"]["progress_sql"]
    assert not (tmp_path / "verl" / "train.dropped.jsonl").exists()


def test_skyrl_and_trl_files(data: Path, tmp_path: Path) -> None:
    base = ["--task", str(data / "questions.json"), "--data-dir", str(data)]
    assert export("--format", "skyrl", *base, "--out", str(tmp_path / "s.parquet")).exit_code == 0
    skyrl = pq.read_table(tmp_path / "s.parquet").to_pylist()
    assert skyrl[2]["env_class"] == "progress_sql"
    assert skyrl[2]["reward_spec"]["ground_truth"] == "SELECT country, count(*) FROM singer GROUP BY country"
    result = export("--format", "trl", *base, "--out", str(tmp_path / "t.jsonl"))
    assert result.exit_code == 0, result.output
    assert "wrote 7 trl rows" in result.stdout
    trl = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert trl[2]["gold_sql"] == skyrl[2]["reward_spec"]["ground_truth"]
    assert trl[2]["prompt"] == skyrl[2]["prompt"]


def test_the_prompt_is_the_environments_opening(data: Path, pool: ExecutionPool) -> None:
    example = Example(0, "How many singers?", "music", str(data / "database" / "music" / "music.sqlite"),
                      "SELECT count(*) FROM singer")  # fmt: skip
    for profile in ("full", "compact", "none"):
        (item,) = export_items([("s", example)], schema_profile=profile)  # type: ignore[arg-type]
        with SQLRefineEnv(config := EnvConfig(schema_profile=profile), store=make_store(config, pool=pool)) as env:  # type: ignore[arg-type]
            assert list(item.messages) == env.reset(example)


def test_mixture_spec(data: Path, tmp_path: Path) -> None:
    (data / "synsql.jsonl").write_text(
        "".join(json.dumps({"db_id": f"syn{i}", "question": f"Q{i}?", "sql": f"SELECT {i}"}) + "\n" for i in range(5))
    )
    spec = {
        "seed": 4,
        "sources": [
            {"name": "music", "task": str(data / "questions.json"), "data_dir": str(data), "count": 3},
            {"task": "synsql", "data_dir": str(data), "questions": "synsql.jsonl", "count": 2},
        ],
    }
    (tmp_path / "mix.json").write_text(json.dumps(spec))
    out = tmp_path / "mix.jsonl"
    result = export("--format", "trl", "--mix", str(tmp_path / "mix.json"), "--out", str(out))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["data_source"] for r in rows) == ["music", "music", "music", "synsql", "synsql"]
    assert all(r["verified"] is False for r in rows if r["data_source"] == "synsql")
    manifest = json.loads((tmp_path / "mix.manifest.json").read_text())
    assert manifest["per_source"] == manifest["source"]["drawn"] == {"music": 3, "synsql": 2}
    assert manifest["unverified"]["synsql"] == 2
    assert manifest["source"]["available"] == {"music": 7, "synsql": 5}
    again = tmp_path / "again.jsonl"
    assert export("--format", "trl", "--mix", str(tmp_path / "mix.json"), "--out", str(again)).exit_code == 0
    assert again.read_text() == out.read_text()  # deterministic


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "verl", "--out", "x.parquet"], "exactly one of --task or --mix"),
        (["--format", "verl", "--task", "spider-dev", "--mix", "m.json", "--out", "x.parquet"], "exactly one"),
        (["--format", "verl", "--task", "spider-dev", "--out", "x.jsonl"], "verl reads parquet"),
        (["--format", "openrlhf", "--task", "spider-dev", "--out", "x.jsonl"], "unknown export format"),
        (["--format", "trl", "--task", "spider-dev", "--out", "x.jsonl"], "needs --data-dir"),
        (["--format", "trl", "--mix", "nowhere.json", "--out", "x.jsonl"], "mixture spec not found"),
        (["--format", "trl", "--task", "spider-dev", "--data-dir", ".", "--out", "x.jsonl",
          "--schema-profile", "big"], "--schema-profile must be one of"),
    ],
)  # fmt: skip
def test_bad_input_says_what_to_fix(args: list[str], message: str) -> None:
    result = export(*args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_unknown_output_type(data: Path, tmp_path: Path) -> None:
    result = export("--format", "trl", "--task", str(data / "questions.json"), "--out", str(tmp_path / "x.csv"))
    assert result.exit_code == 2
    assert "use .parquet or .jsonl" in result.stderr


@pytest.mark.shared_data
def test_database_paths_moved_to_where_the_trainers_keep_them(data: Path, tmp_path: Path) -> None:
    """--db-path-map: the schema and verification read the files here, the rows name them there."""
    out = tmp_path / "moved.jsonl"
    result = export("--format", "trl", "--task", str(data / "questions.json"), "--data-dir", str(data),
                    "--out", str(out), "--filter", "none", "--db-path-map", f"{data}=/cluster/spider")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    music = [r for r in rows if r["db_id"] == "music"]
    assert music
    assert all(r["db_path"] == "/cluster/spider/database/music/music.sqlite" for r in music)
    assert all(r["verified"] and "CREATE TABLE" in r["prompt"][1]["content"] for r in music)
    manifest = json.loads((tmp_path / "moved.manifest.json").read_text())
    assert manifest["settings"]["db_path_maps"] == [f"{data.absolute()}=/cluster/spider"]
    bad = export("--format", "trl", "--task", str(data / "questions.json"), "--data-dir", str(data),
                 "--out", str(tmp_path / "bad.jsonl"), "--db-path-map", "/no/equals/sign")  # fmt: skip
    assert bad.exit_code == 2
    assert "OLD=NEW" in bad.stderr


def test_paper_style_mixture_on_shared_data(shared_data: Path, tmp_path: Path) -> None:
    spec = {
        "seed": 0,
        "total": 60,
        "sources": [
            {"task": "spider-train", "data_dir": str(shared_data / "spider"), "questions": "train_spider.min.json",
             "weight": 1},
            {"name": "superhero", "task": "bird-dev", "data_dir": str(shared_data / "bird"), "db_ids": ["superhero"],
             "weight": 1},
            {"task": "synsql", "data_dir": str(shared_data / "synsql-sample"), "questions": "synsql_1000.jsonl",
             "weight": 1},
        ],
    }  # fmt: skip
    (tmp_path / "mix.json").write_text(json.dumps(spec))
    out = tmp_path / "train.parquet"
    refused = export("--format", "verl", "--mix", str(tmp_path / "mix.json"), "--out", str(out))
    assert refused.exit_code == 2
    assert "superhero (20 examples of superhero) is a database of bird-dev" in " ".join(refused.stderr.split())
    assert not out.exists()
    # superhero is BIRD dev's: only an explicit option lets it in, and the manifest says so
    result = export("--format", "verl", "--mix", str(tmp_path / "mix.json"), "--out", str(out), "--allow-eval-overlap")
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "train.manifest.json").read_text())
    leakage = manifest["source"]["leakage"]
    assert (leakage["decision"], leakage["allow_eval_overlap"]) == ("allowed", True)
    assert [(o["db_id"], o["task"], o["by"]) for o in leakage["overlaps"]] == [("superhero", "bird-dev", "database")]
    assert manifest["settings"]["allow_eval_overlap"] is True
    # rl-default drops the golds that fail, return nothing or depend on row order (written beside)
    dropped = (tmp_path / "train.dropped.jsonl").read_text().splitlines() if manifest["dropped"] else []
    assert manifest["dropped"] == len(dropped)
    assert sum(manifest["per_source"].values()) + manifest["dropped"] == 60
    assert manifest["per_source"]["synsql"] == 20  # no database: never executed, passes through unverified
    assert manifest["unverified"].get("synsql") == 20
    assert manifest["unverified"].get("superhero", 0) == 0
    rows = pq.read_table(out).to_pylist()
    superhero = [r for r in rows if r["data_source"] == "superhero"]
    assert all("Evidence:" in r["prompt"][1]["content"] or not r["extra_info"]["evidence"] for r in superhero)
    assert all("CREATE TABLE" in r["prompt"][1]["content"] for r in superhero)


def test_a_spider_dev_database_is_refused_by_name_and_a_copy_by_its_schema(shared_data: Path, tmp_path: Path) -> None:
    """Spider train is clean; a questions file on Spider dev's concert_singer is refused, and so is a
    copy of that database under another name (same tables and columns: the schema fingerprint)."""
    spider = shared_data / "spider"
    clean = export("--format", "trl", "--task", "spider-train", "--data-dir", str(spider), "--questions",
                   "train_spider.min.json", "--filter", "none", "--out", str(tmp_path / "train.jsonl"))  # fmt: skip
    assert clean.exit_code == 0, clean.output
    leakage = json.loads((tmp_path / "train.manifest.json").read_text())["source"]["leakage"]
    assert (leakage["decision"], leakage["evaluation_databases"]) == ("clean", 20)
    assert any(f.startswith("spider-dev: ") for f in leakage["evaluation_files"])

    folder = tmp_path / "mine"
    copy = folder / "database" / "my_concerts" / "my_concerts.sqlite"
    copy.parent.mkdir(parents=True)
    copy.write_bytes((spider / "database" / "concert_singer" / "concert_singer.sqlite").read_bytes())
    (folder / "database" / "concert_singer").mkdir()
    (folder / "database" / "concert_singer" / "concert_singer.sqlite").write_bytes(copy.read_bytes())
    questions = [{"db_id": db, "question": "How many singers?", "query": "SELECT count(*) FROM singer"}
                 for db in ("concert_singer", "my_concerts")]  # fmt: skip
    (folder / "questions.json").write_text(json.dumps(questions))
    refused = export("--format", "trl", "--task", str(folder / "questions.json"), "--filter", "none",
                     "--out", str(tmp_path / "leak.jsonl"), "--eval-data-dir", str(spider))  # fmt: skip
    assert refused.exit_code == 2
    message = " ".join(refused.stderr.split())
    assert "concert_singer (1 examples of questions) is a database of spider-dev" in message
    assert "my_concerts (1 examples of questions) has the schema of concert_singer, a database of spider-dev" in message
    assert "--allow-eval-overlap" in message
