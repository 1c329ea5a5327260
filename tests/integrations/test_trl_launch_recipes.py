"""recipes/trl/: the `accelerate launch` configs as accelerate 1.x itself reads and validates them, and the
smoke, 8-GPU and vLLM-server recipes' commands as `accelerate launch`, `trl vllm-serve` and `progress-sql
train` parse them, each run through its real data stage (leakage guard, config.json, gold audit) up to the
model load."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from progress_sql.training.recipe import TrainConfig
from tests.integrations.recipe_data import spider_layout, train_until_model_load

RECIPES = Path(__file__).resolve().parents[2] / "recipes" / "trl"


def launch_args(config: Path, *script: str) -> Any:
    """``accelerate launch --config_file config SCRIPT...`` parsed and validated as accelerate's launcher does
    (accelerate/commands/launch.py: launch_command_parser, then _validate_launch_command fills the
    arguments from the config file)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    args = launch_command_parser().parse_args(["--config_file", str(config), *script])
    _validate_launch_command(args)
    return args


@pytest.mark.parametrize(
    ("name", "kind", "launcher_flag"),
    [("multi_gpu", "MULTI_GPU", "multi_gpu"), ("zero3", "DEEPSPEED", "use_deepspeed"), ("fsdp", "FSDP", "use_fsdp")],
)
def test_accelerate_reads_each_config(name: str, kind: str, launcher_flag: str) -> None:
    from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
    from accelerate.utils import DistributedType

    path = RECIPES / f"{name}.yaml"
    config = load_config_from_file(str(path))  # what `accelerate launch --config_file` loads
    assert isinstance(config, ClusterConfig)
    assert config.distributed_type == DistributedType[kind]
    assert (config.num_processes, config.num_machines, config.mixed_precision) == (8, 1, "bf16")
    args = launch_args(path, "train.py", "train")
    assert getattr(args, launcher_flag) is True
    assert (args.num_processes, args.mixed_precision) == (8, "bf16")
    if name == "zero3":
        assert config.deepspeed_config["zero_stage"] == 3
        assert config.deepspeed_config["zero3_save_16bit_model"] is True  # one HF folder at the final save
        assert args.zero_stage == 3
    if name == "fsdp":
        from accelerate.utils.launch import prepare_multi_gpu_env

        env = prepare_multi_gpu_env(args)  # the variables the launched processes read
        assert (env["ACCELERATE_USE_FSDP"], env["FSDP_VERSION"], env["FSDP_SHARDING_STRATEGY"]) == (
            "true",
            "2",
            "FULL_SHARD",
        )
        assert env["FSDP_STATE_DICT_TYPE"] == "FULL_STATE_DICT"
        # the model is loaded on every process before the trainer: no rank-0-only loading
        assert env["FSDP_CPU_RAM_EFFICIENT_LOADING"] == "false"


def recipe_command(script: str, *extra: str, **env: str) -> list[str]:
    """The command a recipe would run (its PROGRESS_SQL_DRY_RUN output, one argument per line)."""
    result = subprocess.run(
        ["bash", str(RECIPES / script), *extra],
        env={**os.environ, "PROGRESS_SQL_DRY_RUN": "1", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.splitlines()


@pytest.fixture(scope="module")
def spider(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return spider_layout(tmp_path_factory.mktemp("spider"))


def data_stage(arguments: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TrainConfig:
    """The recipe's ``train`` through its real data stage; the run folder it leaves says the data was clean."""
    stage = train_until_model_load(arguments, monkeypatch, tmp_path / "hub")
    assert stage.reached_model_load, stage.output
    assert stage.config is not None
    out = stage.config.out
    written = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert written["model"] == stage.config.model
    assert (out / "dropped.jsonl").is_file()  # the gold audit ran and says what it dropped
    return stage.config


def test_smoke_recipe_runs_a_few_steps_on_one_gpu(
    spider: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trl import GRPOConfig

    from progress_sql.training.rl import trainer_args

    command = recipe_command("smoke.sh", OUT=str(tmp_path / "smoke"), DATA_DIR=str(spider))
    assert command[0] == "progress-sql"
    config = data_stage(command[1:], tmp_path, monkeypatch)
    assert config.model == "Qwen/Qwen2.5-0.5B-Instruct"
    assert not config.allow_eval_overlap
    rl = config.rl
    assert (rl.steps, rl.turns, rl.generations, rl.temperature, rl.learning_rate) == (5, 4, 8, 1.0, 1e-6)
    assert (rl.vllm_mode, rl.save_total_limit, config.rl_prompts) == ("colocate", 1, 64)
    grpo = GRPOConfig(**{**trainer_args(rl, tmp_path), "use_cpu": True})
    assert (grpo.per_device_train_batch_size, grpo.gradient_accumulation_steps) == (8, 4)  # 4 prompts x 8 samples
    # the trainer setting's KL term and 4 updates per generated batch (16 prompts)
    assert (grpo.beta, grpo.steps_per_generation, grpo.generation_batch_size) == (0.001, 16, 128)
    assert grpo.generation_kwargs == {"max_tokens": 512}


def test_the_smoke_recipe_refuses_an_evaluation_task(
    spider: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TASK=spider-dev is what the recipe used to default to: the leakage guard stops it before any model."""
    command = recipe_command("smoke.sh", OUT=str(tmp_path / "smoke"), DATA_DIR=str(spider), TASK="spider-dev")
    stage = train_until_model_load(command[1:], monkeypatch, tmp_path / "hub")
    assert stage.exit_code == 2, stage.output
    assert "evaluation databases" in stage.output
    assert not stage.reached_model_load
    assert not (tmp_path / "smoke" / "config.json").exists()


@pytest.mark.parametrize("accelerate_config", ["zero3.yaml", "fsdp.yaml"])
def test_eight_gpu_recipe_launches_train_through_accelerate(
    accelerate_config: str, spider: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from progress_sql.training.rl import batch_layout

    command = recipe_command(
        "qwen7b.sh", "--steps", "3", OUT=str(tmp_path / "run"), DATA_DIR=str(spider),
        ACCELERATE_CONFIG=accelerate_config,
    )  # fmt: skip
    assert command[:2] == ["accelerate", "launch"]
    args = launch_args(Path(command[3]), *command[4:])
    assert args.num_processes == 8
    assert args.training_script_args[0] == "train"
    config = data_stage(args.training_script_args, tmp_path, monkeypatch)
    assert config.model == "Qwen/Qwen2.5-Coder-7B-Instruct"
    assert (config.rl.steps, config.rl.turns, config.rl.learning_rate) == (3, 4, 1e-6)  # the extra argument won
    assert config.rl.report_to == ("tensorboard",)
    # an update of 16 prompts x 8 samples (a quarter of a rollout batch) on 8 processes in passes of 4: 4
    # accumulated passes per GPU
    assert batch_layout(config.rl, args.num_processes) == (4, 4)


def test_only_the_main_process_writes_the_run_artefacts(
    spider: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 1 of an `accelerate launch` reads the same data and writes neither config.json nor dropped.jsonl."""
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    command = recipe_command("smoke.sh", OUT=str(tmp_path / "smoke"), DATA_DIR=str(spider))
    stage = train_until_model_load(command[1:], monkeypatch, tmp_path / "hub")
    assert stage.reached_model_load, stage.output
    assert not (tmp_path / "smoke" / "config.json").exists()
    assert not (tmp_path / "smoke" / "dropped.jsonl").exists()


def dry_run_commands(script: str, *extra: str, **env: str) -> list[list[str]]:
    """A recipe's printed commands: one argument per line, a blank line between two commands."""
    commands: list[list[str]] = [[]]
    for line in recipe_command(script, *extra, **env):
        if line:
            commands[-1].append(line)
        else:
            commands.append([])
    return commands


def visible_devices(command: list[str]) -> set[int]:
    """The GPUs a command printed as ``env CUDA_VISIBLE_DEVICES=... PROGRAM ...`` may use."""
    assert command[0] == "env"
    name, _, devices = command[1].partition("=")
    assert name == "CUDA_VISIBLE_DEVICES"
    return {int(device) for device in devices.split(",")}


@pytest.mark.parametrize(("gpus", "server_gpus"), [(None, None), (2, 1), (4, 2)])
def test_vllm_server_recipe_serves_and_trains_on_disjoint_gpus(
    gpus: int | None, server_gpus: int | None, spider: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """None: the recipe's defaults, 8 GPUs of which the last 4 serve."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from trl import GRPOConfig
    from trl.generation.vllm_client import VLLMClient
    from trl.scripts.vllm_serve import build_command, make_parser

    from progress_sql.training.recipe import REAL_MODEL_RL
    from progress_sql.training.rl import batch_layout, trainer_args

    layout = {} if gpus is None else {"GPUS": str(gpus), "SERVER_GPUS": str(server_gpus)}
    machine, serving = (gpus or 8), (server_gpus or 4)
    server, health, train = dry_run_commands(
        "vllm_server.sh", "--steps", "3", OUT=str(tmp_path / "run"), DATA_DIR=str(spider), VLLM_PORT="8123",
        **layout,
    )  # fmt: skip
    # the server: `trl vllm-serve` as TRL's own parser reads it (trl/cli/commands/vllm_serve.py), nothing
    # left over to forward to `vllm serve`, on the last GPUs, tensor parallel over all of them
    assert server[2:4] == ["trl", "vllm-serve"]
    served, forwarded = make_parser(prog="trl vllm-serve").parse_args_and_config(
        args=server[4:], return_remaining_strings=True
    )
    assert forwarded == []
    assert (served.model, served.host, served.port) == ("Qwen/Qwen2.5-Coder-7B-Instruct", "127.0.0.1", 8123)
    assert served.tensor_parallel_size == serving
    vllm_serve = build_command(served)
    assert vllm_serve[vllm_serve.index("--port") + 1] == "8123"
    assert visible_devices(server) == set(range(machine - serving, machine))
    # the probe asks the route TRL's client waits on (VLLMClient.check_server: f"{base_url}/health")
    assert health[0] == "curl"
    assert health[-1] == "http://127.0.0.1:8123/health"
    assert "/health" in inspect.getsource(VLLMClient.check_server)
    # the trainers: the other GPUs, one process each, `train --vllm server` pointed at the server
    trainers = visible_devices(train)
    assert trainers == set(range(machine - serving))
    assert not trainers & visible_devices(server)
    assert train[2:4] == ["accelerate", "launch"]
    args = launch_command_parser().parse_args(train[4:])
    _validate_launch_command(args)
    assert args.use_deepspeed is True  # zero3.yaml, its num_processes replaced
    assert args.num_processes == len(trainers)
    assert args.training_script_args[0] == "train"
    config = data_stage(args.training_script_args, tmp_path, monkeypatch)
    rl = config.rl
    assert (rl.vllm_mode, rl.vllm_server_host, rl.vllm_server_port, rl.vllm_server_timeout) == (
        "server", "127.0.0.1", 8123, 900.0,
    )  # fmt: skip
    assert (rl.steps, rl.learning_rate, rl.prompts_per_step) == (3, 1e-6, REAL_MODEL_RL["prompts_per_step"])
    assert batch_layout(rl, args.num_processes)[0] == 4  # the default step splits over the trainers
    grpo = GRPOConfig(**{**trainer_args(rl, tmp_path, args.num_processes), "use_cpu": True})
    assert (grpo.use_vllm, grpo.vllm_mode) == (True, "server")
    assert (grpo.vllm_server_host, grpo.vllm_server_port, grpo.vllm_server_timeout) == ("127.0.0.1", 8123, 900.0)


def test_vllm_server_recipe_leaves_the_trainers_a_gpu(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(RECIPES / "vllm_server.sh")],
        env={**os.environ, "PROGRESS_SQL_DRY_RUN": "1", "GPUS": "2", "SERVER_GPUS": "2"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 2
    assert "SERVER_GPUS (2) must leave at least one of the GPUS (2) to the trainers" in result.stderr
