"""verl 0.9.1's synchronous v1 trainer with Progress-SQL's training-step metrics.

verl logs the reward function's extra keys (``reward_extra_info``) for validation only
(``verl/trainer/ppo/v1/trainer_base.py`` ``_validate``); its training step logs the summed reward.
:class:`ProgressSQLTrainer` is ``PPOTrainerSync`` plus :func:`~.metrics.step_metrics` of the step's
trajectories, read from TransferQueue where the v1 agent-loop worker put them. It is registered with
verl's own trainer registry (``register_trainer``) under :data:`TRAINER_MODE`, selected by
``trainer.v1.trainer_mode=progress_sql_sync``; verl looks the name up inside its Ray task runner, so
the run starts from :mod:`.main` (``python -m progress_sql.integrations.verl.main``), whose task runner
imports this module first."""

from __future__ import annotations

from typing import Any

import ray  # type: ignore[import-not-found, unused-ignore]  # verl's stack, not in the type-checking environment
import transfer_queue as tq  # type: ignore[import-not-found]
from verl.trainer.main_ppo import TaskRunnerV1
from verl.trainer.ppo.v1 import PPOTrainerSync, register_trainer

from progress_sql.integrations.verl.metrics import step_metrics

#: The ``trainer.v1.trainer_mode`` of :class:`ProgressSQLTrainer`.
TRAINER_MODE = "progress_sql_sync"


def batch_extra_fields(batch: Any) -> list[dict[str, Any]]:
    """The ``extra_fields`` of the batch's trajectories (a ``KVBatchMeta``), padding left out, read
    from TransferQueue as verl's replay buffer reads them (``replay_buffer.py`` ``_dapo_filtered_keys``)."""
    keep = [not tag.get("is_padding", False) for tag in batch.tags]
    if not any(keep):
        return []
    data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"])
    values = [getattr(value, "data", value) for value in data["extra_fields"]]
    return [dict(value) for value, kept in zip(values, keep, strict=True) if kept and isinstance(value, dict)]


@register_trainer(TRAINER_MODE)
class ProgressSQLTrainer(PPOTrainerSync):  # type: ignore[misc]  # verl is not type-checked
    """``PPOTrainerSync`` whose step metrics also carry the Progress-SQL ones (``progress_sql/...``).

    verl 0.9.1's ``PPOTrainer`` tells the synchronous trainer from the asynchronous ones by the name
    it was selected under (``verl/trainer/ppo/v1/trainer_base.py``: ``self.trainer_mode == "sync"``
    at lines 153, 731, 902, 912, 1004 and 1499: the replay buffer, the dataloader's batch size, the
    TransferQueue checkpoints and the prompts put into TransferQueue). Selected as
    :data:`TRAINER_MODE`, this trainer would get ``ReplayBufferAsync`` and one prompt per dataloader
    batch; its mode therefore reads ``"sync"``, so it runs exactly as ``PPOTrainerSync``."""

    @property
    def trainer_mode(self) -> str:
        return "sync"

    @trainer_mode.setter
    def trainer_mode(self, value: str) -> None:  # PPOTrainer.__init__ sets trainer.v1.trainer_mode
        if value not in (TRAINER_MODE, "sync"):
            raise ValueError(f"ProgressSQLTrainer is the synchronous trainer {TRAINER_MODE!r}, not {value!r}")

    def _compute_metrics(
        self, batch: Any, metrics: dict[str, Any], timing_raw: dict[str, Any], global_steps: int, epoch: int
    ) -> None:
        super()._compute_metrics(batch, metrics, timing_raw, global_steps=global_steps, epoch=epoch)
        metrics.update(step_metrics(batch_extra_fields(batch)))


# verl itself unwraps remote classes this way (verl/single_controller/ray/base.py, _unwrap_ray_remote).
_VerlTaskRunner: type = TaskRunnerV1.__ray_actor_class__


class _TaskRunner(_VerlTaskRunner):  # type: ignore[misc]
    """verl's v1 task runner; defined in this module, so the Ray worker that runs it imports this
    module, and with it the registration of :class:`ProgressSQLTrainer`, before the trainer lookup."""


#: The Ray actor class :mod:`.main` hands to verl's ``run_ppo``.
TaskRunner = ray.remote(_TaskRunner)
