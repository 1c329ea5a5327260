"""``python -m progress_sql.integrations.verl.main <hydra overrides>``: verl 0.9.1's ``main_ppo`` with
the task runner of :mod:`.trainer`, so that ``trainer.v1.trainer_mode=progress_sql_sync`` (the
Progress-SQL training-step metrics) resolves inside the Ray task. Same config (verl's own
``ppo_trainer.yaml``), same overrides and the same checks as ``python -m verl.trainer.main_ppo``
(``verl/trainer/main_ppo.py`` ``main``); only the v1 trainer is supported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hydra  # type: ignore[import-not-found]  # verl's stack, not in the type-checking environment
import verl.trainer.main_ppo as verl_main
from verl.trainer.ppo.utils import need_critic, need_reference_policy
from verl.utils.config import validate_config
from verl.utils.device import auto_set_device

from progress_sql.errors import ConfigError
from progress_sql.integrations.verl.trainer import TaskRunner

#: verl's own config folder: the recipes' overrides compose against its ``ppo_trainer.yaml``.
VERL_CONFIG_DIR = str(Path(verl_main.__file__).with_name("config"))


def check_config(config: Any) -> None:
    """verl's checks of ``main_ppo.main`` (device, ``validate_config`` with the reference policy and
    critic derived by verl's own helpers), in the driver before Ray starts, and the v1 trainer."""
    auto_set_device(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    if not config.trainer.use_v1:
        raise ConfigError("progress_sql.integrations.verl.main runs verl's v1 trainer: drop trainer.use_v1=false")


def train(config: Any, task_runner_class: Any = TaskRunner) -> None:
    """:func:`check_config`, then verl's ``run_ppo``: ``ray.init`` from ``ray_kwargs`` (unless Ray is
    already up), ``task_runner_class.remote()`` and ``ray.get(runner.run.remote(config))``."""
    check_config(config)
    verl_main.run_ppo(config, task_runner_class=task_runner_class)


@hydra.main(config_path=VERL_CONFIG_DIR, config_name="ppo_trainer", version_base=None)  # type: ignore[untyped-decorator]
def main(config: Any) -> None:
    train(config)


if __name__ == "__main__":
    main()
