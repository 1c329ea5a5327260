"""SkyRL 0.4.0 entry point for Progress-SQL: name it with ``trainer.override_entrypoint``.

    python -m skyrl.train.entrypoints.main_base \\
        trainer.override_entrypoint=progress_sql.integrations.skyrl_entrypoint \\
        environment.env_class=progress_sql generator.max_turns=4 \\
        environment.skyrl_gym.progress_sql.timeout_s=5.0 ...

SkyRL's ``main_base.main`` sees ``trainer.override_entrypoint`` before it parses anything and calls
this module's :func:`main` instead (skyrl@0.4.0 skyrl/train/entrypoints/main_base.py:345-358). Here
the command line is parsed with SkyRL's own config extended by the environment's settings
(``environment.skyrl_gym.progress_sql``: any ``EnvConfig`` field, ``step_rewards``,
``execution_workers`` and ``settings_file``, a JSON or YAML file of more), which SkyRL's generator
hands to every environment it makes (``getattr(skyrl_gym_cfg, env_class)``,
skyrl_gym_generator.py:396-397). Then, as main_base does (:360-366 and :338-342): validate, start
Ray, and in the Ray task register the environment and run SkyRL's ``BasePPOExp``.

Needs the SkyRL trainer (``skyrl[fsdp]==0.4.0``, Python >= 3.12: installsets/skyrl-gpu.txt); the
skyrl-free parts are in :mod:`progress_sql.integrations.skyrl` and are tested without it.
"""

# No `from __future__ import annotations`: SkyRL builds its config from the fields' real types.
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ray  # type: ignore[import-not-found, unused-ignore]
from skyrl.train.config import (  # type: ignore[import-not-found, unused-ignore]
    EnvironmentConfig,
    SkyRLGymConfig,
    SkyRLTrainConfig,
    TrainerConfig,
)
from skyrl.train.entrypoints.main_base import BasePPOExp  # type: ignore[import-not-found, unused-ignore]
from skyrl.train.utils import validate_cfg  # type: ignore[import-not-found, unused-ignore]
from skyrl.train.utils.utils import initialize_ray  # type: ignore[import-not-found, unused-ignore]

from progress_sql.export.formats import SKYRL_ENV_CLASS
from progress_sql.integrations.skyrl import entry_settings, run_registered

__all__ = ["ProgressSQLTrainConfig", "main", "prepare", "skyrl_entrypoint"]


@dataclass
class ProgressSQLGymConfig(SkyRLGymConfig):  # type: ignore[misc]
    """SkyRL's ``environment.skyrl_gym`` with the environment's settings under its env_class."""

    progress_sql: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProgressSQLEnvironmentConfig(EnvironmentConfig):  # type: ignore[misc]
    env_class: str = SKYRL_ENV_CLASS
    skyrl_gym: ProgressSQLGymConfig = field(default_factory=ProgressSQLGymConfig)


@dataclass
class ProgressSQLTrainerConfig(TrainerConfig):  # type: ignore[misc]
    # main_base leaves this argument on the command line it hands over; the strict parse needs a field.
    override_entrypoint: str | None = None


@dataclass
class ProgressSQLTrainConfig(SkyRLTrainConfig):  # type: ignore[misc]
    """SkyRL's whole config, every field overridable from the command line as before."""

    trainer: ProgressSQLTrainerConfig = field(default_factory=ProgressSQLTrainerConfig)
    environment: ProgressSQLEnvironmentConfig = field(default_factory=ProgressSQLEnvironmentConfig)


def prepare(cfg: Any) -> Any:
    """Resolve the environment's settings in ``cfg`` (the named file read here, on the head node, so
    the settings travel inside the config to the Ray task) and size the execution pool for SkyRL's
    stepping threads; bad settings fail here, before Ray starts."""
    gym = cfg.environment.skyrl_gym
    gym.progress_sql = entry_settings(gym.progress_sql, gym.max_env_workers)
    return cfg


@ray.remote(num_cpus=1)  # type: ignore[untyped-decorator, unused-ignore]
def skyrl_entrypoint(cfg: Any) -> None:
    """main_base's task (main_base.py:338-342) with the environment registered in its process."""
    run_registered(lambda: BasePPOExp(cfg).run())


def main(argv: Sequence[str] | None = None) -> None:
    """What ``trainer.override_entrypoint`` calls: main_base's ``main`` (main_base.py:360-366) with the
    extended config."""
    cfg = prepare(ProgressSQLTrainConfig.from_cli_overrides(list(sys.argv[1:] if argv is None else argv)))
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(skyrl_entrypoint.remote(cfg))


if __name__ == "__main__":
    main()
