"""What a reward may know besides the trajectory (every reward takes the same context)."""

from __future__ import annotations

from dataclasses import dataclass, field

from progress_sql.rewards.progressive import ProgressiveConfig


@dataclass(frozen=True, slots=True)
class RewardContext:
    """The gold SQL, the generation budget and the progressive reward's weights."""

    gold_sql: str
    max_response_chars: int = 4096
    progressive: ProgressiveConfig = field(default_factory=ProgressiveConfig)
