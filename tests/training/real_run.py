"""The real-model run's test configuration (training/pretrained.py on the tiny chat model of conftest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from progress_sql.training.pretrained import HeldOut, WarmStartSettings
from progress_sql.training.recipe import TrainConfig
from progress_sql.training.rl import RLSettings


def no_bar(description: str, total: int) -> Any:
    return lambda n: None


def config_for(out: Path, model: Path, heldout_dir: Path, **changes: Any) -> TrainConfig:
    settings: dict[str, Any] = dict(
        out=out, model=str(model), prompt="small", rl_prompts=4, threads=1,
        rl=RLSettings(steps=1, prompts_per_step=2, generations=2, max_new_tokens=8, save_steps=1, turns=2),
        warm_start=WarmStartSettings(steps=2, batch_size=2, examples=4, warmup=1, two_turn_share=0.5),
        heldout=HeldOut(task=str(heldout_dir / "questions.json"), size=4, data_dir=str(heldout_dir)),
    )  # fmt: skip
    return TrainConfig(**(settings | changes))
