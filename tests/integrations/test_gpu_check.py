"""scripts/gpu_check.sh, the GPU check: its CPU mode end to end (real ``progress-sql train`` runs on a tiny
Qwen2, the weights compared, the JSON written), the carried wheels' pins against constraints.txt, which
wheels a machine gets, and the weight comparison itself."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "gpu_check.sh"
#: What the GPU machine brings itself (docs/training.md, "The GPU check"): never carried.
ON_THE_MACHINE = {"torch", "transformers", "accelerate", "tokenizers", "huggingface-hub", "safetensors", "numpy"}


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    """scripts/gpu_check.py as a module."""
    spec = importlib.util.spec_from_file_location("gpu_check", REPO_ROOT / "scripts" / "gpu_check.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_cpu_check_trains_and_compares_the_weights(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "GPU_CHECK_WORK": str(tmp_path / "work"), "PYTHON": sys.executable,
           "OMP_NUM_THREADS": "1"}  # fmt: skip
    done = subprocess.run(["bash", str(SCRIPT), "--cpu"], env=env, capture_output=True, text=True, timeout=480)
    written = out / "gpu_check.json"
    report = json.loads(written.read_text(encoding="utf-8")) if written.is_file() else {}
    failed = [f"{c['name']}: {c['detail']}" for c in report.get("checks", []) if c["status"] == "fail"]
    assert done.returncode == 0, "\n".join([*failed, done.stdout[-4000:], done.stderr[-3000:]])
    assert (report["device"], report["complete"], report["ok"], report["failed"]) == ("cpu", True, True, [])
    statuses = {check["name"]: check["status"] for check in report["checks"]}
    for run in ("full", "lora"):
        for check in ("exit", "trainer", "lr", "steps", "precision", "finite", "checkpoint", "weights"):
            assert statuses[f"{run}.{check}"] == "pass", (run, check)
    assert statuses["fsdp.exit"] == "skipped"
    assert report["runs"]["fsdp"]["skipped"].startswith("needs CUDA")
    assert {"gpu_check.json", "gpu_check.log", "full.log", "lora.log"} <= {p.name for p in out.iterdir()}

    full, lora = report["runs"]["full"], report["runs"]["lora"]
    # full fine-tuning at the paper's lr: fp32 master weights loaded from a bf16 checkpoint all move, by about
    # the lr a step; kept in bf16 most of these updates would have rounded away
    assert report["settings"]["lr"] == full["learning_rate"] == full["summary"]["settings"]["lr"] == 1e-6
    assert full["precision"]["checkpoint_dtype"] == "bfloat16"
    assert full["precision"]["weight_dtypes"] == ["float32"]
    assert full["weights"]["changed_share"] > 0.9
    assert 0 < full["weights"]["max_abs_delta"] <= 10 * 1e-6 * full["steps"]
    assert full["weights"]["bf16_would_round_away_share"] > 0.5
    assert full["weights"]["nonfinite"] == 0
    # LoRA: every lora_B left zero, only the adapted Linear weights of the merged model changed
    adapted = lora["weights"]["lora"]
    assert adapted["lora_B"] > 0
    assert adapted["lora_B_moved"] == adapted["lora_B"]
    assert adapted["merged_targets_changed"] == adapted["base_targets"] > 0
    assert adapted["changed_outside_targets"] == []
    assert lora["precision"]["adapter_dtypes"] == ["float32"]
    # the timings and the reward signal behind the verdicts
    for run in (full, lora):
        assert len(run["timing"]["step_time_s"]) == run["steps"]
        assert all(time > 0 for time in run["timing"]["step_time_s"])
        assert any(share is not None and share < 1 for share in run["signal"]["zero_variance_share"])
        assert run["trainer"]["parameter_devices"] == ["cpu"]
    assert report["model"]["prime"]["reached_target"]
    assert report["model"]["saved_dtype"] == "bfloat16"


def test_the_carried_wheels_are_the_constraints_pins(gpu_check: ModuleType) -> None:
    from packaging.specifiers import SpecifierSet

    listed = subprocess.run(["bash", str(SCRIPT), "--list"], capture_output=True, text=True, check=True).stdout.split()
    pinned = gpu_check.pins(REPO_ROOT / "constraints.txt")
    assert listed == [f"{c.name}=={pinned[gpu_check.normalized(c.name)]}" for c in gpu_check.CARRIED]
    names = {gpu_check.normalized(spec.partition("==")[0]) for spec in listed}
    assert {"trl", "datasets", "sqlglot"} <= names
    assert not names & ON_THE_MACHINE
    for carried in gpu_check.CARRIED:  # each pin lies in the range the check installs it for
        assert SpecifierSet(carried.needed).contains(pinned[gpu_check.normalized(carried.name)]), carried.name


def test_a_machine_gets_the_wheels_it_lacks(gpu_check: ModuleType) -> None:
    wheels = [Path(name) for name in (
        "trl-1.16.0-py3-none-any.whl", "typer-0.28.0-py3-none-any.whl", "peft-0.21.2-py3-none-any.whl",
        "multiprocess-0.70.19-py311-none-any.whl", "multiprocess-0.70.19-py312-none-any.whl",
    )]  # fmt: skip
    present = {"typer": "0.9.0", "peft": "0.21.0", "sqlglot": "30.30.0"}
    choices = {
        c.name: c
        for c in gpu_check.choose_wheels(wheels, present.get, supported=lambda wheel: "py311" not in wheel.name)
    }
    assert (choices["trl"].install, choices["trl"].wheel) == (True, "trl-1.16.0-py3-none-any.whl")
    assert choices["typer"].install  # 0.9.0 is outside >=0.15
    assert "outside" in choices["typer"].reason
    assert not choices["peft"].install  # 0.21.0 is in range: the machine's own is kept
    assert not choices["sqlglot"].install
    assert choices["multiprocess"].wheel == "multiprocess-0.70.19-py312-none-any.whl"  # the one this Python takes
    assert not choices["datasets"].install  # missing, and no wheel carried for it: said so
    assert "no carried wheel" in choices["datasets"].reason


def test_the_weight_comparison(gpu_check: ModuleType) -> None:
    torch = pytest.importorskip("torch")
    initial = {"model.embed_tokens.weight": torch.full((2, 4), 0.05, dtype=torch.bfloat16),
               "model.norm.weight": torch.ones(4, dtype=torch.bfloat16)}  # fmt: skip
    embed = initial["model.embed_tokens.weight"].float()
    embed[0] += 1e-6  # an update of the paper's lr: below bf16's resolution at 0.05
    final = {"model.embed_tokens.weight": embed, "model.norm.weight": torch.ones(4),
             "lm_head.weight": embed.clone()}  # fmt: skip
    change = gpu_check.weight_change(initial, final)
    assert change["changed_share"] == 4 / 12
    assert change["max_abs_delta"] == pytest.approx(1e-6, rel=0.1)
    assert change["bf16_would_round_away_share"] == 1.0
    assert change["changed_tensors"] == ["model.embed_tokens.weight"]
    assert change["only_in_final"] == []  # a FULL_STATE_DICT save's copy of the tied embedding
    assert change["tied_copies"] == {"lm_head.weight": "equal to the saved model.embed_tokens.weight"}
    final["lm_head.weight"] = embed + 1
    final["model.norm.weight"] = torch.tensor([float("nan"), 1.0, 1.0, 1.0])
    change = gpu_check.weight_change(initial, final)
    assert change["only_in_final"] == ["lm_head.weight"]
    assert change["nonfinite"] == 1
    assert gpu_check.is_lora_target("model.layers.0.self_attn.q_proj.weight")
    assert not gpu_check.is_lora_target("model.layers.0.self_attn.q_proj.bias")
    assert not gpu_check.is_lora_target("model.embed_tokens.weight")
