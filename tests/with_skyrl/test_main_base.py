"""SkyRL 0.4.0's own ``main_base.main`` with ``trainer.override_entrypoint`` pointing at ours, on the
recipe's command line: SkyRL's dispatch, its config parser and ``validate_cfg`` are real; Ray and the
trainer (``BasePPOExp``, which needs GPUs) are stubbed at their boundaries.

Skipped, with one line saying why, where skyrl is not importable: skyrl 0.4.0 needs Python >= 3.12 and
torch, and the test environment is Python 3.11 because the CPU build of torch at hand is for 3.11
(PyPI's torch for 3.12 is the CUDA build, several GB with its NVIDIA libraries). It was run by hand in a
Python 3.11 scratch environment (``pip install --no-deps --ignore-requires-python skyrl==0.4.0`` plus
the modules main_base imports, CPU torch), where pydantic needs ``typing_extensions.TypedDict`` for
skyrl's TypedDicts: hence the shim below, a no-op on 3.12.
"""

from __future__ import annotations

import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
import typing_extensions


def _why_skyrl_is_missing() -> str:
    found = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
    if sys.version_info < (3, 12):
        return (
            f"skyrl 0.4.0 needs Python >= 3.12 and torch; this test environment is {found} (the CPU torch at "
            "hand is for 3.11; PyPI's torch for 3.12 is the multi-GB CUDA build): run tests/with_skyrl in a "
            "Python 3.12 environment with installsets/skyrl-gpu.txt (docs/training.md, SkyRL)"
        )
    return f"skyrl 0.4.0 is not installed in this {found} environment: pip install -r installsets/skyrl-gpu.txt"


pytest.importorskip("skyrl", reason=_why_skyrl_is_missing())

if sys.version_info < (3, 12):  # see the module docstring
    typing.TypedDict = typing_extensions.TypedDict  # type: ignore[misc]

import skyrl_gym  # noqa: E402  (after the skip and the shim)
from skyrl.train.entrypoints import main_base  # noqa: E402  (after the skip and the shim)

from progress_sql.integrations import skyrl_entrypoint  # noqa: E402  (after the skip and the shim)
from progress_sql.integrations.trainer_setting import PAPER  # noqa: E402  (after the skip and the shim)
from tests.integrations.trainer_values import GSPO_OWN, disagreements, skyrl_values  # noqa: E402  (after the skip and the shim)

ROOT = Path(__file__).resolve().parent.parent.parent


def recipe_arguments(algorithm: str) -> list[str]:
    """The arguments recipes/skyrl/train.sh hands to ``python -m skyrl.train.entrypoints.main_base``."""
    env = {**os.environ, "PROGRESS_SQL_DRY_RUN": "1", "ALGORITHM": algorithm, "PYTHON": sys.executable}
    printed = subprocess.run(
        ["bash", str(ROOT / "recipes/skyrl/train.sh")], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert printed[1:3] == ["-m", "skyrl.train.entrypoints.main_base"]
    return printed[3:]


@pytest.mark.parametrize("algorithm", ["grpo", "gspo"])
def test_main_base_runs_our_entry_point_with_the_recipes_settings(
    algorithm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    class Experiment:  # BasePPOExp, stubbed at the trainer's boundary
        def __init__(self, cfg: Any) -> None:
            self.cfg = cfg

        def run(self) -> None:
            seen["cfg"] = self.cfg
            seen["registered"] = skyrl_gym.registry.get("progress_sql")

    monkeypatch.setattr(skyrl_entrypoint, "BasePPOExp", Experiment)
    monkeypatch.setattr(skyrl_entrypoint, "initialize_ray", lambda cfg: seen.setdefault("ray_started", True))
    task = skyrl_entrypoint.skyrl_entrypoint
    monkeypatch.setattr(task, "remote", lambda cfg: task._function(cfg))  # the task's body, in process
    monkeypatch.setattr(skyrl_entrypoint.ray, "get", lambda result: result)
    monkeypatch.setattr(sys, "argv", ["main_base.py", *recipe_arguments(algorithm)])
    monkeypatch.chdir(ROOT)

    main_base.main()

    cfg = seen["cfg"]
    assert seen["ray_started"] is True
    assert seen["registered"].entry_point == "progress_sql.integrations.skyrl:ProgressSQLEnv"
    assert type(cfg).__name__ == "ProgressSQLTrainConfig"
    assert cfg.trainer.override_entrypoint == "progress_sql.integrations.skyrl_entrypoint"
    assert cfg.environment.env_class == "progress_sql"
    # the file's settings, resolved on the head node, and the pool sized for the stepping threads
    assert cfg.environment.skyrl_gym.progress_sql == {
        "reward": "progressive", "progressive": {"gamma": 0.5}, "timeout_s": 10.0, "step_rewards": False,
        "execution_workers": 32}  # fmt: skip
    # the trainer setting's: max_input_length + max_generate_length = 8,192 (tests/integrations/test_trainer_setting.py)
    assert (cfg.generator.max_turns, cfg.generator.max_input_length, cfg.generator.n_samples_per_prompt) == (
        4, 7168, 8)  # fmt: skip
    assert (cfg.trainer.train_batch_size, cfg.trainer.policy_mini_batch_size) == (64, 16)
    assert cfg.trainer.algorithm.advantage_estimator == "grpo"
    assert cfg.trainer.algorithm.loss_reduction == "sequence_mean"
    # SkyRL's own typed config runs the trainer setting (GSPO: its own clip range, no KL)
    assert disagreements(PAPER, "skyrl", skyrl_values(cfg), skip=GSPO_OWN if algorithm == "gspo" else set()) == {}
    want = {"grpo": ("regular", 0.2, 0.2, True), "gspo": ("gspo", 3e-4, 4e-4, False)}[algorithm]
    algo = cfg.trainer.algorithm
    assert (algo.policy_loss_type, algo.eps_clip_low, algo.eps_clip_high, algo.use_kl_loss) == want
