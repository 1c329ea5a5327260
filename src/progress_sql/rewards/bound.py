"""``reward-bound`` as a library call: the progressive reward's upper bound for every first correct turn
k* = 1..T (and for no success), whether it falls strictly as k* grows, and the run folder
(``reward_bound.json``, ``reward_bound.png``)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progress_sql.errors import ConfigError
from progress_sql.rewards.progressive import ProgressiveConfig, upper_bound_curve
from progress_sql.runfolder import RunFolder, RunSummary, basic_report, write_json, writing_results


@dataclass(frozen=True, slots=True)
class BoundRun:
    """The bound by k*, whether it falls strictly, the record written, and the plot (or why none)."""

    points: tuple[tuple[str, float], ...]
    falling: bool
    record: dict[str, Any]
    plot: Path | None
    plot_problem: str | None


def reward_bound_run(turns: int, out: Path, *, no_align_penalty: bool = False) -> BoundRun:
    """The bound of R(Y) for T = ``turns`` (format kept, SQL executable at both ends, Delta <= 1), written
    to ``out``; ConfigError for ``turns`` < 1."""
    from progress_sql.plots import PlottingUnavailableError, reward_bound_plot

    if turns < 1:
        raise ConfigError(f"--turns must be at least 1, got {turns}")
    config = ProgressiveConfig(no_align_penalty_on_first_turn_success=no_align_penalty)
    points = upper_bound_curve(turns, config)
    values = [value for _, value in points]
    falling = all(a > b for a, b in itertools.pairwise(values))
    record = {
        "reward": config.version,
        "config_hash": config.config_hash,
        "turns": turns,
        "bound": {label: round(value, 6) for label, value in points},
        "strictly_falling": falling,
    }
    summary = RunSummary("reward-bound", {"turns": turns, "no_align_penalty": no_align_penalty}, record)
    samples = [{"k_star": label, "bound": round(value, 6)} for label, value in points]
    report = basic_report(f"Progressive reward bound, T = {turns}", summary.to_dict(), results=record)
    with writing_results(out):
        RunFolder(out).create()
        write_json(out / "reward_bound.json", record)  # before the summary, which comes last
        RunFolder(out).write(summary, samples, report + "\n![bound](reward_bound.png)\n")
    plot, problem = None, None
    try:
        plot = reward_bound_plot(points, out / "reward_bound.png", f"Progressive reward bound, T={turns}")
    except PlottingUnavailableError as error:
        problem = str(error)
    return BoundRun(tuple(points), falling, record, plot, problem)
