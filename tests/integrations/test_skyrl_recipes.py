"""recipes/skyrl/smoke.sh: its one-GPU settings reach SkyRL's command line (as SkyRL's own parser,
``OmegaConf.from_cli``, reads it: the last value of a key wins), and the data preparation its header
documents (a schema-disjoint split of Spider train, then both SkyRL exports) runs for real on a
Spider-layout folder built here; exporting the evaluation task spider-dev instead is refused."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from progress_sql.cli import app
from tests.conftest import REPO_ROOT, build_database

pq = pytest.importorskip("pyarrow.parquet", reason="parquet export needs the [export] extra")
omegaconf = pytest.importorskip("omegaconf", reason="reading the command line as SkyRL does needs omegaconf")

SMOKE = REPO_ROOT / "recipes" / "skyrl" / "smoke.sh"
runner = CliRunner()

#: Spider train's questions in the test's folder: four databases of distinct schemas, golds that
#: pass the rl-default filter (they run, return rows, and do not depend on row order).
TRAIN_QUESTIONS = {
    "music": ["SELECT count(*) FROM singer", "SELECT name FROM singer WHERE country = 'France'"],
    "shop": ["SELECT count(*) FROM item", "SELECT name FROM item WHERE price > 5"],
    "contact_lenses": ["SELECT count(*) FROM suppliers", "SELECT lens_name FROM contact_lenses WHERE price < 20"],
    "ties": ["SELECT count(*) FROM member", "SELECT name FROM member WHERE age > 28"],
}
#: Spider dev's database in the same folder (as in Spider's release): what the leakage guard reads.
DEV_DATABASE = "fk_invalid"


def smoke_command(*overrides: str, **env: str) -> list[str]:
    """smoke.sh's command line (PROGRESS_SQL_DRY_RUN: one argument per line, nothing started); PYTHON is
    this interpreter, which prints the trainer setting's overrides for train.sh."""
    variables = {**os.environ, "PROGRESS_SQL_DRY_RUN": "1", "PYTHON": sys.executable, **env}
    printed = subprocess.run(
        ["bash", str(SMOKE), *overrides], env=variables, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    return printed


def test_the_smoke_run_is_one_gpu_colocated_small_and_short() -> None:
    command = smoke_command(TRAIN_DATA="/data/train.parquet", VAL_DATA="/data/validation.parquet")
    assert command[1:3] == ["-m", "skyrl.train.entrypoints.main_base"]
    cfg = omegaconf.OmegaConf.from_cli(command[3:])
    placement, engines = cfg.trainer.placement, cfg.generator.inference_engine
    assert (placement.policy_num_nodes, placement.policy_num_gpus_per_node) == (1, 1)
    assert (placement.ref_num_nodes, placement.ref_num_gpus_per_node) == (1, 1)
    assert placement.colocate_all is True
    assert (engines.num_engines, engines.tensor_parallel_size) == (1, 1)
    assert cfg.trainer.policy.model.path == "Qwen/Qwen2.5-0.5B-Instruct"
    assert cfg.trainer.max_training_steps == 4
    # four updates per batch, as the trainer setting's (tests/integrations/test_trainer_setting.py)
    assert (cfg.trainer.train_batch_size, cfg.trainer.policy_mini_batch_size) == (4, 1)
    assert cfg.generator.n_samples_per_prompt == 4
    assert cfg.trainer.eval_interval == cfg.trainer.max_training_steps  # one evaluation, after the last step
    assert cfg.trainer.ckpt_interval == -1  # no optimizer-state checkpoint in a smoke run
    assert list(cfg.data.train_data) == ["/data/train.parquet"]
    assert list(cfg.data.val_data) == ["/data/validation.parquet"]
    # the training recipe's entry point and environment settings file, unchanged
    assert cfg.trainer.override_entrypoint == "progress_sql.integrations.skyrl_entrypoint"
    assert cfg.environment.env_class == "progress_sql"
    assert cfg.environment.skyrl_gym.progress_sql.settings_file == str(REPO_ROOT / "recipes" / "skyrl" / "env.yaml")


def test_model_steps_and_extra_overrides_win() -> None:
    command = smoke_command("generator.n_samples_per_prompt=2", MODEL="Qwen/Qwen2.5-1.5B-Instruct", STEPS="2")
    cfg = omegaconf.OmegaConf.from_cli(command[3:])
    assert cfg.trainer.policy.model.path == "Qwen/Qwen2.5-1.5B-Instruct"
    assert (cfg.trainer.max_training_steps, cfg.trainer.eval_interval, cfg.trainer.hf_save_interval) == (2, 2, 2)
    assert cfg.generator.n_samples_per_prompt == 2


def documented_preparation() -> list[list[str]]:
    """The ``progress-sql`` commands in smoke.sh's header, continuation lines joined, each without
    the leading ``progress-sql`` (the ``SPLIT=...`` line is the test's to set)."""
    header = [line[1:].strip() for line in SMOKE.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    joined = re.sub(r"\\\s*\n\s*", " ", "\n".join(header))
    commands = [shlex.split(line) for line in joined.splitlines() if line.startswith("progress-sql ")]
    return [command[1:] for command in commands]


def spider_layout(root: Path) -> Path:
    """Spider's release layout: train_spider.json and dev.json over database/<db>/<db>.sqlite."""
    for db_id in [*TRAIN_QUESTIONS, DEV_DATABASE]:
        build_database(f"{db_id}.sql", root / "database")
    train = [{"db_id": db_id, "question": f"Question {n} on {db_id}?", "query": sql}
             for db_id, golds in TRAIN_QUESTIONS.items() for n, sql in enumerate(golds)]  # fmt: skip
    (root / "train_spider.json").write_text(json.dumps(train), encoding="utf-8")
    dev = [{"db_id": DEV_DATABASE, "question": "How many votes?", "query": "SELECT count(*) FROM vote"}]
    (root / "dev.json").write_text(json.dumps(dev), encoding="utf-8")
    return root


def run_cli(arguments: list[str]) -> Any:
    # one filter worker: the test machine's cores are shared
    return runner.invoke(app, [*arguments, "--workers", "1"] if arguments[0] == "export" else arguments)


def test_the_documented_data_preparation_runs_and_is_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spider = spider_layout(tmp_path / "spider")
    monkeypatch.chdir(tmp_path)  # the header's relative --out paths land here
    split = tmp_path / "runs" / "spider-split"
    commands = documented_preparation()
    assert [c[0] for c in commands] == ["split", "export", "export"]
    for command in commands:
        expanded = [a.replace("$SPIDER", str(spider)).replace("$SPLIT", str(split)) for a in command]
        result = run_cli(expanded)
        assert result.exit_code == 0, result.output
    db_ids: dict[str, set[str]] = {}
    for name in ("train", "validation"):
        out = tmp_path / "data" / "skyrl" / "smoke" / f"{name}.parquet"
        rows = pq.read_table(out).to_pylist()
        assert rows, f"{out} has no rows"
        assert {row["env_class"] for row in rows} == {"progress_sql"}
        db_ids[name] = {row["extra_info"]["db_id"] for row in rows}
        leakage = json.loads(out.with_name(f"{name}.manifest.json").read_text())["source"]["leakage"]
        assert leakage["decision"] == "clean"
        assert any(f.startswith("spider-dev: ") for f in leakage["evaluation_files"])  # the guard read dev.json
    assert not db_ids["train"] & db_ids["validation"]  # schema-disjoint: no database in both
    assert db_ids["train"] | db_ids["validation"] == set(TRAIN_QUESTIONS)


def test_exporting_spider_dev_for_training_is_refused(tmp_path: Path) -> None:
    """The registered evaluation task itself, from the same folder: the guard refuses it (exit 2) and
    writes nothing. Needs no ../shared: the folder is built here."""
    spider = spider_layout(tmp_path / "spider")
    out = tmp_path / "dev.parquet"
    refused = run_cli(["export", "--format", "skyrl", "--task", "spider-dev", "--data-dir", str(spider),
                       "--out", str(out)])  # fmt: skip
    assert refused.exit_code == 2, refused.output
    message = " ".join(refused.stderr.split())
    assert f"{DEV_DATABASE} (1 examples of spider-dev) is a database of spider-dev" in message
    assert not out.exists()
